/*
 * fvp-harness's executor runner on ExecuTorch's own runtime (the C++ SDK the
 * executorch wheel ships). Written against the public runtime API; its flags,
 * printed lines and output files follow upstream's Linux executor_runner
 * (examples/portable/executor_runner) so the harness's stock parsers read it.
 *
 * Compile definitions (set by CMakeLists.txt):
 *   FVP_RUNNER_BEFORE=1  every inference re-creates the Method and its planned
 *                        memory (buffers, HierarchicalAllocator, MemoryManager,
 *                        load_method); 0 loads once and reuses them ("after").
 *   FVP_RUNNER_TRACED=1  an ETDumpGen is given to load_method and the ETDump is
 *                        written to --etdump_path (the wheel's etdump library).
 *
 * The "Iteration i of n" time covers what one inference costs in each build:
 * in "before" the Method set-up plus execute(), in "after" execute() alone.
 * Preparing the inputs is outside the timer in both, as upstream does.
 */

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/runtime/core/event_tracer.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/log.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>
#if FVP_RUNNER_TRACED
#include <executorch/devtools/etdump/etdump_flatcc.h>
#endif

#ifndef FVP_RUNNER_BEFORE
#error "FVP_RUNNER_BEFORE must be 0 (after) or 1 (before)"
#endif
#ifndef FVP_RUNNER_TRACED
#define FVP_RUNNER_TRACED 0
#endif

using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::aten::TensorImpl;
using executorch::extension::FileDataLoader;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::EventTracer;
using executorch::runtime::HierarchicalAllocator;
using executorch::runtime::MemoryAllocator;
using executorch::runtime::MemoryManager;
using executorch::runtime::Method;
using executorch::runtime::MethodMeta;
using executorch::runtime::Program;
using executorch::runtime::Result;
using executorch::runtime::Span;
using executorch::runtime::Tag;
using executorch::runtime::TensorInfo;

namespace {

// Same pool sizes as upstream's runner: 4 MB for the method's metadata, 1 MB
// of scratch for the kernels.
uint8_t method_pool[4 * 1024U * 1024U];
uint8_t temp_pool[1024U * 1024U];

struct Flags {
  std::string model_path = "model.pte";
  std::string inputs;
  std::string output_file;
  std::string print_output = "summary";
  uint32_t num_executions = 1;
  std::string method_name;
#if FVP_RUNNER_TRACED
  std::string etdump_path = "model.etdump";
#endif
};

enum class PrintMode { None, Summary, All };

// gflags' rules, as upstream's runner parses its command line with gflags:
// --name=value, --name value, one or two dashes; an unknown flag stops the
// program with gflags' message; what is left over is reported by main().
bool parse_flags(int argc, char** argv, Flags& flags, std::vector<std::string>& rest) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) {
        rest.emplace_back(argv[i]);
      }
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      rest.push_back(arg);
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string name = body;
    std::optional<std::string> value;
    const size_t eq = body.find('=');
    if (eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
    }
    std::string* text = nullptr;
    if (name == "model_path") {
      text = &flags.model_path;
    } else if (name == "inputs") {
      text = &flags.inputs;
    } else if (name == "output_file") {
      text = &flags.output_file;
    } else if (name == "print_output") {
      text = &flags.print_output;
    } else if (name == "method_name") {
      text = &flags.method_name;
#if FVP_RUNNER_TRACED
    } else if (name == "etdump_path") {
      text = &flags.etdump_path;
#endif
    } else if (name != "num_executions") {
      std::fprintf(stderr, "ERROR: unknown command line flag '%s'\n", name.c_str());
      return false;
    }
    if (!value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ERROR: flag '%s' is missing its argument\n", arg.c_str());
        return false;
      }
      value = argv[++i];
    }
    if (text != nullptr) {
      *text = *value;
      continue;
    }
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(value->c_str(), &end, 10);
    if (value->empty() || *end != '\0' || errno != 0 || n > UINT32_MAX || (*value)[0] == '-') {
      std::fprintf(
          stderr,
          "ERROR: illegal value '%s' specified for uint32 flag 'num_executions'\n",
          value->c_str());
      return false;
    }
    flags.num_executions = static_cast<uint32_t>(n);
  }
  return true;
}

double ticks_to_ms(et_timestamp_t ticks) {
  const auto ratio = et_pal_ticks_to_ns_multiplier();
  return static_cast<double>(ticks) * ratio.numerator / ratio.denominator / 1000000.0;
}

std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> parts;
  std::stringstream stream(list);
  std::string part;
  while (std::getline(stream, part, ',')) {
    parts.push_back(part);
  }
  return parts;
}

Error read_inputs(const std::vector<std::string>& paths, std::vector<std::string>& contents) {
  for (const auto& path : paths) {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      ET_LOG(Error, "Failed to open input file: %s", path.c_str());
      return Error::AccessFailed;
    }
    std::ostringstream data;
    data << file.rdbuf();
    if (file.bad()) {
      ET_LOG(Error, "Failed to read input file: %s", path.c_str());
      return Error::AccessFailed;
    }
    contents.push_back(data.str());
  }
  return Error::Ok;
}

// The method's planned memory and the objects that lend it to the runtime:
// the part "before" re-creates for every inference.
struct LoadedMethod {
  std::vector<std::unique_ptr<uint8_t[]>> buffers;
  std::vector<Span<uint8_t>> spans;
  size_t planned_bytes = 0;
  MemoryAllocator method_allocator{sizeof(method_pool), method_pool};
  MemoryAllocator temp_allocator{sizeof(temp_pool), temp_pool};
  std::optional<HierarchicalAllocator> planned;
  std::optional<MemoryManager> memory;
  std::optional<Method> method;
};

std::unique_ptr<LoadedMethod> load_method(
    Program& program,
    const char* method_name,
    const MethodMeta& meta,
    EventTracer* tracer,
    bool announce) {
  auto loaded = std::make_unique<LoadedMethod>();
  const size_t count = meta.num_memory_planned_buffers();
  for (size_t id = 0; id < count; ++id) {
    const size_t size = static_cast<size_t>(meta.memory_planned_buffer_size(id).get());
    if (announce) {
      ET_LOG(Info, "Setting up CPU planned buffer %zu, size %zu.", id, size);
    }
    loaded->buffers.push_back(std::make_unique<uint8_t[]>(size));
    loaded->spans.emplace_back(loaded->buffers.back().get(), size);
    loaded->planned_bytes += size;
  }
  loaded->planned.emplace(Span<Span<uint8_t>>(loaded->spans.data(), loaded->spans.size()));
  loaded->memory.emplace(&loaded->method_allocator, &*loaded->planned, &loaded->temp_allocator);
  Result<Method> method = program.load_method(method_name, &*loaded->memory, tracer);
  ET_CHECK_MSG(
      method.ok(),
      "Loading of method %s failed with status 0x%" PRIx32,
      method_name,
      static_cast<uint32_t>(method.error()));
  loaded->method.emplace(std::move(method.get()));
  return loaded;
}

// Upstream's prepare_input_tensors, in short: one buffer per tensor input,
// filled from its file or with ones; the buffers must outlive execute().
Error set_inputs(
    Method& method,
    const std::vector<std::string>& files,
    std::vector<std::vector<uint8_t>>& storage) {
  const MethodMeta meta = method.method_meta();
  const size_t count = meta.num_inputs();
  if (!files.empty() && files.size() != count) {
    ET_LOG(
        Error,
        "Wrong number of inputs allocated compared to method  %zu ? %zu",
        count,
        files.size());
    return Error::InvalidArgument;
  }
  storage.clear();
  storage.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    Result<Tag> tag = meta.input_tag(i);
    if (!tag.ok()) {
      return tag.error();
    }
    if (tag.get() != Tag::Tensor) {
      ET_LOG(Error, "Input %zu of type %zu not supported", i, static_cast<size_t>(tag.get()));
      return Error::InvalidArgument;
    }
    Result<TensorInfo> info = meta.input_tensor_meta(i);
    if (!info.ok()) {
      return info.error();
    }
    storage.emplace_back(info->nbytes());
    std::vector<uint8_t>& data = storage.back();
    TensorImpl impl(
        info->scalar_type(),
        static_cast<ssize_t>(info->sizes().size()),
        const_cast<TensorImpl::SizesType*>(info->sizes().data()),
        data.data(),
        const_cast<TensorImpl::DimOrderType*>(info->dim_order().data()));
    Tensor tensor(&impl);
    if (!files.empty()) {
      if (files[i].size() != info->nbytes()) {
        ET_LOG(
            Error,
            "input size (%zu) and tensor size (%zu) mismatch!",
            files[i].size(),
            info->nbytes());
        return Error::InvalidArgument;
      }
      std::memcpy(data.data(), files[i].data(), data.size());
    } else {
      switch (info->scalar_type()) {
#define FVP_FILL_ONES(ctype, dtype)                                              \
  case ScalarType::dtype:                                                        \
    std::fill(tensor.mutable_data_ptr<ctype>(),                                  \
              tensor.mutable_data_ptr<ctype>() + tensor.numel(), ctype(1));      \
    break;
        ET_FORALL_REALHBBF16_TYPES(FVP_FILL_ONES)
#undef FVP_FILL_ONES
        default:
          ET_LOG(Error, "Unsupported scalar type %d", static_cast<int>(info->scalar_type()));
          return Error::InvalidArgument;
      }
    }
    const Error status = method.set_input(tensor, i);
    if (status != Error::Ok) {
      ET_LOG(Error, "Failed to prepare input %zu: 0x%" PRIx32, i, static_cast<uint32_t>(status));
      return status;
    }
  }
  return Error::Ok;
}

// One value as upstream's print_evalue prints it: integral floats get a dot.
void print_value(std::ostream& os, double value, bool floating) {
  if (!floating) {
    os << static_cast<int64_t>(value);
    return;
  }
  std::ostringstream as_float;
  as_float << value;
  std::ostringstream as_int;
  as_int << static_cast<int64_t>(value);
  const bool dot = std::isfinite(value) && (value == -0.0 || as_float.str() == as_int.str());
  os << value << (dot ? "." : "");
}

// upstream's "summary" form: tensor(sizes=[...], [first 100, ..., last 100])
// with ten items a line when it wraps.
void print_tensor_summary(std::ostream& os, const Tensor& tensor) {
  constexpr size_t kEdge = 100;
  constexpr size_t kPerLine = 10;
  os << "tensor(sizes=[";
  for (size_t d = 0; d < static_cast<size_t>(tensor.dim()); ++d) {
    os << (d ? ", " : "") << tensor.size(d);
  }
  os << "], ";
  const size_t n = static_cast<size_t>(tensor.numel());
  std::vector<double> values(n);
  bool floating = false;
  switch (tensor.scalar_type()) {
#define FVP_READ(ctype, dtype)                                                   \
  case ScalarType::dtype:                                                        \
    for (size_t i = 0; i < n; ++i) {                                             \
      values[i] = static_cast<double>(tensor.const_data_ptr<ctype>()[i]);        \
    }                                                                            \
    floating = std::is_floating_point<ctype>::value;                             \
    break;
    ET_FORALL_REAL_TYPES(FVP_READ)
#undef FVP_READ
    default:
      os << "[<unhandled scalar type " << static_cast<int>(tensor.scalar_type()) << ">])";
      return;
  }
  const bool wrapping = std::min(n, kEdge * 2) > kPerLine;
  os << "[";
  size_t printed = 0;
  for (size_t i = 0; i < n; ++i) {
    if (wrapping && printed % kPerLine == 0) {
      os << "\n  ";
    }
    print_value(os, values[i], floating);
    if (wrapping || i < n - 1) {
      os << ", ";
    }
    ++printed;
    if (i + 1 == kEdge && i + kEdge + 1 < n) {
      if (wrapping) {
        os << "\n  ...,";
        printed = kPerLine - kEdge % kPerLine;
        if (printed % kPerLine != 0) {
          os << "\n  ";
        }
      } else {
        os << "..., ";
      }
      i = n - kEdge - 1;
    }
  }
  if (wrapping) {
    os << "\n";
  }
  os << "])";
}

void print_outputs(const std::vector<EValue>& outputs, PrintMode mode) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (mode == PrintMode::Summary) {
      std::cout << "OutputX " << i << ": ";
      if (outputs[i].isTensor()) {
        print_tensor_summary(std::cout, outputs[i].toTensor());
      } else {
        std::cout << "<non-tensor output>";
      }
      std::cout << std::endl;
      continue;
    }
    if (!outputs[i].isTensor()) {
      std::printf("Output[%zu]: Not Tensor\n", i);
      continue;
    }
    const Tensor tensor = outputs[i].toTensor();
    for (ssize_t j = 0; j < tensor.numel(); ++j) {
      switch (tensor.scalar_type()) {
        case ScalarType::Int:
          std::printf("Output[%zu][%zd]: (int) %d\n", i, j, tensor.const_data_ptr<int>()[j]);
          break;
        case ScalarType::Float:
          std::printf("Output[%zu][%zd]: (float) %f\n", i, j, tensor.const_data_ptr<float>()[j]);
          break;
        case ScalarType::Char:
          std::printf("Output[%zu][%zd]: (char) %d\n", i, j, tensor.const_data_ptr<int8_t>()[j]);
          break;
        case ScalarType::Bool: {
          const int8_t v = tensor.const_data_ptr<int8_t>()[j];
          std::printf("Output[%zu][%zd]: (bool) %s (0x%x)\n", i, j, v ? "true " : "false", v);
          break;
        }
        default:
          break;
      }
    }
  }
}

// The bare-metal runner's memory lines (examples/arm/executor_runner), for
// what the runtime took when it loaded the method.
void log_memory(const LoadedMethod& loaded, size_t input_bytes) {
  const MemoryAllocator& pool = loaded.method_allocator;
  const size_t used = pool.used_size();
  ET_LOG(
      Info,
      "method_allocator_used:     %lu / %lu  free: %lu ( used: %lu %% ) ",
      static_cast<unsigned long>(used),
      static_cast<unsigned long>(pool.size()),
      static_cast<unsigned long>(pool.free_size()),
      static_cast<unsigned long>(100 * used / pool.size()));
  ET_LOG(
      Info,
      "method_allocator_planned:  %lu bytes",
      static_cast<unsigned long>(loaded.planned_bytes));
  ET_LOG(Info, "method_allocator_loaded:   %lu bytes", static_cast<unsigned long>(used));
  ET_LOG(Info, "method_allocator_input:    %lu bytes", static_cast<unsigned long>(input_bytes));
  ET_LOG(
      Info,
      "temp_allocator:            %lu",
      static_cast<unsigned long>(loaded.temp_allocator.size()));
}

#if FVP_RUNNER_TRACED
bool write_etdump(executorch::etdump::ETDumpGen& tracer, const std::string& path) {
  std::unique_ptr<FILE, decltype(&fclose)> file(std::fopen(path.c_str(), "w+"), fclose);
  if (!file) {
    ET_LOG(Error, "Failed to open ETDump file at %s.", path.c_str());
    return false;
  }
  executorch::etdump::ETDumpResult result = tracer.get_etdump_data();
  if (result.buf == nullptr || result.size == 0) {
    ET_LOG(Error, "No ETDump data available!");
    return false;
  }
  const size_t written = std::fwrite(result.buf, 1, result.size, file.get());
  std::free(result.buf);
  if (written != result.size) {
    ET_LOG(Error, "Failed to open ETDump file at %s.", path.c_str());
    return false;
  }
  ET_LOG(Info, "ETDump written to file '%s'.", path.c_str());
  return true;
}
#endif

} // namespace

int main(int argc, char** argv) {
  executorch::runtime::runtime_init();

  Flags flags;
  std::vector<std::string> rest;
  if (!parse_flags(argc, argv, flags, rest)) {
    return 1;
  }
  if (!rest.empty()) {
    std::string message = "Extra commandline args:";
    for (const auto& arg : rest) {
      message += " " + arg;
    }
    ET_LOG(Error, "%s", message.c_str());
    return 1;
  }
  PrintMode print_mode = PrintMode::Summary;
  if (flags.print_output == "none") {
    print_mode = PrintMode::None;
  } else if (flags.print_output == "all") {
    print_mode = PrintMode::All;
  } else if (flags.print_output != "summary") {
    ET_LOG(
        Error,
        "Unknown --print_output mode '%s'. Expected 'none', 'summary', or 'all'.",
        flags.print_output.c_str());
    return 1;
  }

  std::vector<std::string> input_files;
  if (!flags.inputs.empty()) {
    ET_LOG(Info, "Loading inputs from input file(s).");
    const Error status = read_inputs(split_commas(flags.inputs), input_files);
    ET_CHECK_MSG(
        status == Error::Ok,
        "Could not load inputs: 0x%" PRIx32,
        static_cast<uint32_t>(status));
  }

  Result<FileDataLoader> loader = FileDataLoader::from(flags.model_path.c_str());
  ET_CHECK_MSG(
      loader.ok(),
      "FileDataLoader::from() failed: 0x%" PRIx32,
      static_cast<uint32_t>(loader.error()));

  const et_timestamp_t before_load = executorch::runtime::pal_current_ticks();
  Result<Program> program = Program::load(&loader.get());
  if (!program.ok()) {
    ET_LOG(Error, "Failed to parse model file %s", flags.model_path.c_str());
    return 1;
  }
  ET_LOG(Info, "Model file %s is loaded.", flags.model_path.c_str());

  const char* method_name = nullptr;
  if (!flags.method_name.empty()) {
    method_name = flags.method_name.c_str();
  } else {
    const auto first = program->get_method_name(0);
    ET_CHECK_MSG(first.ok(), "Program has no methods");
    method_name = *first;
  }
  ET_LOG(Info, "Using method %s", method_name);

  Result<MethodMeta> meta = program->method_meta(method_name);
  ET_CHECK_MSG(
      meta.ok(),
      "Failed to get method_meta for %s: 0x%" PRIx32,
      method_name,
      static_cast<uint32_t>(meta.error()));

#if FVP_RUNNER_TRACED
  executorch::etdump::ETDumpGen etdump;
  EventTracer* tracer = &etdump;
#else
  EventTracer* tracer = nullptr;
#endif

  std::unique_ptr<LoadedMethod> loaded = load_method(*program, method_name, *meta, tracer, true);
  const et_timestamp_t after_load = executorch::runtime::pal_current_ticks();
  ET_LOG(Info, "Model loaded in %f ms.", ticks_to_ms(after_load - before_load));

  std::vector<std::vector<uint8_t>> input_storage;
  {
    const Error status = set_inputs(*loaded->method, input_files, input_storage);
    ET_CHECK_MSG(
        status == Error::Ok,
        "Could not prepare inputs: 0x%" PRIx32,
        static_cast<uint32_t>(status));
  }
  size_t input_bytes = 0;
  for (const auto& buffer : input_storage) {
    input_bytes += buffer.size();
  }
  log_memory(*loaded, input_bytes);

  et_timestamp_t total = 0;
  for (uint32_t i = 0; i < flags.num_executions; ++i) {
    et_timestamp_t spent = 0;
#if FVP_RUNNER_BEFORE
    {
      // The shape of the seed's "before": nothing of the last inference's
      // set-up is kept, so the planned memory and the Method are made anew.
      const et_timestamp_t start = executorch::runtime::pal_current_ticks();
      loaded.reset();
      loaded = load_method(*program, method_name, *meta, tracer, false);
      spent += executorch::runtime::pal_current_ticks() - start;
    }
#endif
    // Inputs are set before every execution: memory planning may reuse an
    // input's space, so its contents are not kept from one run to the next.
    const Error prepared = set_inputs(*loaded->method, input_files, input_storage);
    ET_CHECK_MSG(
        prepared == Error::Ok,
        "Could not prepare inputs: 0x%" PRIx32,
        static_cast<uint32_t>(prepared));

    const et_timestamp_t start = executorch::runtime::pal_current_ticks();
    const Error status = loaded->method->execute();
    spent += executorch::runtime::pal_current_ticks() - start;
    total += spent;
    ET_CHECK_MSG(
        status == Error::Ok,
        "Execution of method %s failed with status 0x%" PRIx32,
        method_name,
        static_cast<uint32_t>(status));
    ET_LOG(
        Info,
        "Iteration %" PRIu32 " of %" PRIu32 ": %f ms",
        i + 1,
        flags.num_executions,
        ticks_to_ms(spent));
  }
  ET_LOG(
      Info,
      "Model executed successfully %" PRIu32 " time(s) in %f ms.",
      flags.num_executions,
      ticks_to_ms(total));

  Method& method = *loaded->method;
  std::vector<EValue> outputs(method.outputs_size());
  ET_LOG(Info, "%zu outputs: ", outputs.size());
  const Error got = method.get_outputs(outputs.data(), outputs.size());
  ET_CHECK(got == Error::Ok);

  if (!flags.output_file.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].isTensor()) {
        continue;
      }
      const Tensor tensor = outputs[i].toTensor();
      char name[255];
      std::snprintf(
          name, sizeof(name), "%s-%d.bin", flags.output_file.c_str(), static_cast<int>(i));
      ET_LOG(Info, "Writing output to file: %s", name);
      FILE* file = std::fopen(name, "wb");
      ET_CHECK_MSG(file != nullptr, "Failed to open output file: %s", name);
      const size_t written = std::fwrite(tensor.const_data_ptr<char>(), 1, tensor.nbytes(), file);
      ET_CHECK_MSG(
          std::fclose(file) == 0 && written == tensor.nbytes(),
          "Failed to write output file: %s",
          name);
    }
  }

  if (print_mode != PrintMode::None) {
    print_outputs(outputs, print_mode);
  }

#if FVP_RUNNER_TRACED
  ET_CHECK_MSG(write_etdump(etdump, flags.etdump_path), "Failed to save ETDump file.");
#endif
  return 0;
}
