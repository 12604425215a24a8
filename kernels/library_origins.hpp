// The files the plugin's CUDA libraries (and the plugin itself) were loaded
// from, one sentence for the device note (library_origins.cpp).
#pragma once
#include <string>

namespace mixp::cuda {
std::string library_origins();
}  // namespace mixp::cuda
