// One execution of a compiled model: bound input/output buffers, the
// interpreter loop over the model's operations, and the output shapes.
#pragma once

#include <memory>
#include <vector>

#include "model.h"
#include "nnapi_c_api.h"

namespace nnrt {

struct IoBinding {
  bool set = false;
  bool omitted = false;       // buffer == nullptr && length == 0
  uint8_t* buffer = nullptr;  // user memory (inputs are never written)
  size_t length = 0;
  std::vector<uint32_t> dims;      // effective dims after merging setInput's type
  std::shared_ptr<Memory> memory;  // keeps a Memory alive when bound from one
};

// The observer of ANeuralNetworksHost_setOperationObserver (null: none).
void set_operation_observer(ANeuralNetworksHostOperationObserver observer, void* context);

class Execution {
 public:
  explicit Execution(std::shared_ptr<const Compilation> compilation);

  // `type` may be null; `dims`/`count` come from it when it is not.
  void set_input(int32_t index, const Operand* type, const void* buffer, size_t length);
  void set_output(int32_t index, const Operand* type, void* buffer, size_t length);
  void set_input_memory(int32_t index, const Operand* type, std::shared_ptr<Memory> memory,
                        size_t offset, size_t length);
  void set_output_memory(int32_t index, const Operand* type, std::shared_ptr<Memory> memory,
                         size_t offset, size_t length);
  // Runs the model (start() then run()). Returns NO_ERROR,
  // OUTPUT_INSUFFICIENT_SIZE or throws.
  Result compute();
  // The checks before a run (every input and output bound, not run before);
  // marks the execution started. startCompute calls it on the caller's
  // thread, so that misuse is refused at once, then run() on another.
  void start();
  // Runs the model after start(). Reads only the compilation (shared with
  // other executions, never written) and this execution's own state.
  Result run();

  // Valid after compute() returned NO_ERROR or OUTPUT_INSUFFICIENT_SIZE.
  const std::vector<uint32_t>& output_dims(int32_t index) const;

 private:
  IoBinding& binding(std::vector<IoBinding>& list, int32_t index, const char* what);
  std::vector<uint32_t> merge_dims(const Operand& decl, const Operand* type) const;

  std::shared_ptr<const Compilation> compilation_;
  const Model& model_;
  std::vector<IoBinding> inputs_, outputs_;
  std::vector<std::vector<uint32_t>> output_dims_;
  bool started_ = false;
  bool has_result_ = false;
};

}  // namespace nnrt
