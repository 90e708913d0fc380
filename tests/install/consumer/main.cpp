// Parses --input specs through the installed library and prints what it got.
#include <nnapi_convert/input_spec.h>

#include <iostream>

int main() {
  using nnapi_convert::parse_input_spec;
  const nnapi_convert::InputSpec spec =
      parse_input_spec("1x3x0x0,dtype=quint8,scale=0.5,zero_point=3,nhwc");
  std::cout << "consumer: nnapi_convert " << NNAPI_CONVERT_VERSION << ": "
            << nnapi_convert::format_input_spec(spec);
  try {
    parse_input_spec("1x3x,nhwc");
    std::cout << "; bad spec accepted\n";
    return 1;
  } catch (const nnapi_convert::SpecError& e) {
    std::cout << "; bad spec refused: " << e.what() << "\n";
  }
  return 0;
}
