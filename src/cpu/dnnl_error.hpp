// oneDNN failures as mixp errors. A primitive oneDNN refuses for its
// arguments (an extreme stride, padding or size the caller was allowed to
// ask for) is MIXP_ERR_UNSUPPORTED naming the geometry, not a bug in mixp;
// a failed allocation is MIXP_ERR_OUT_OF_MEMORY; anything else is internal.
#pragma once
#include <dnnl.hpp>
#include <string>

#include "core/error.hpp"

namespace mixp::cpu {

[[noreturn]] inline void fail_dnnl(const dnnl::error &e, const char *op, const std::string &geometry) {
  switch (e.status) {
    case dnnl_out_of_memory:
      fail(MIXP_ERR_OUT_OF_MEMORY, op, ": out of memory in oneDNN for ", geometry);
    case dnnl_invalid_arguments:
    case dnnl_unimplemented:
      fail(MIXP_ERR_UNSUPPORTED, op, ": oneDNN cannot compute ", geometry, " (", e.what(), ")");
    default:
      fail(MIXP_ERR_INTERNAL, op, ": oneDNN failed (", e.what(), ") for ", geometry);
  }
}

}  // namespace mixp::cpu
