// Uses the installed library: parses --input specs and converts a model
// (argv[1], examples/tiny_cnn.pt), printing what it got.
#include <nnapi_convert/converter.h>
#include <nnapi_convert/input_spec.h>

#include <iostream>

int main(int argc, char** argv) {
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
  if (argc < 2) return 0;
  // The library's whole pipeline: LibTorch loads and freezes the model,
  // nnapi-convert lowers it.
  nnapi_convert::ConvertOptions options;
  options.model_path = argv[1];
  options.inputs.push_back(parse_input_spec("1x3x32x32"));
  try {
    const nnapi_convert::Conversion c = nnapi_convert::convert(options);
    std::cout << "consumer: converted: " << c.operation_count << " NNAPI operations";
    for (const auto& [name, count] : c.operations) std::cout << ", " << name << " " << count;
    std::cout << "\n";
  } catch (const nnapi_convert::ConvertError& e) {
    std::cout << "consumer: convert failed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
