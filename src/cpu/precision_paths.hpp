// How each precision's matrix products run on this CPU, and whether a half
// type can be faster than fp32 here: oneDNN's effective ISA (which
// ONEDNN_MAX_CPU_ISA caps) decides, not the units cpuid lists. Said in a CPU
// session's device note and in mixp_build_info().
#pragma once
#include <string>

namespace mixp::cpu {

struct PrecisionPaths {
  std::string fp32, bf16, f16;  // one phrase each, e.g. "oneDNN on AMX-BF16"
  bool bf16_faster = false;     // bf16 products run on a unit faster than fp32
  bool f16_faster = false;
};

// Read once, on first use (thread-safe).
const PrecisionPaths &precision_paths();

// "cpu: AVX2 ... AMX-BF16; fp32: ...; bf16: ... (faster than fp32); f16: ...
// (not faster than fp32)": the note of a CPU session. The "<dtype>: ...
// (faster|not faster than fp32)" parts are a documented format (mixp.h).
std::string describe_cpu();

}  // namespace mixp::cpu
