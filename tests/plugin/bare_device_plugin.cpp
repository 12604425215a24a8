// A device plugin with the required core and none of the optional
// capabilities, standing in for libmixp_cuda.so (MIXP_BACKEND_PATH) so that
// the callers' handling of a device that declines them is exercised where
// every real device backend has them all (tests/c/test_plugin_capabilities.c):
// a communicator refuses it with MIXP_ERR_UNSUPPORTED, the profiler times it
// with the host clock, the memory statistics fall back to the tensor counts.
// Its memory is host memory (malloc) and the copies are real, so tensors can
// be made and read; the kernels are not part of this test double: a test
// that reaches one aborts, naming it.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/plugin.hpp"

namespace {

using namespace mixp;

[[noreturn]] void unreachable(const char *kernel) {
  std::fprintf(stderr, "bare device plugin: kernel %s is not part of this test double\n", kernel);
  std::abort();
}

class BareBackend final : public Backend {
 public:
  const char *name() const noexcept override { return "bare"; }

  void *allocate(size_t nbytes) override {
    void *p = std::malloc(nbytes ? nbytes : 1);
    if (!p) unreachable("allocate (out of host memory)");
    return p;
  }
  void deallocate(void *p, size_t) noexcept override { std::free(p); }
  void copy_from_host(void *dst, const void *src, size_t nbytes) override {
    std::memcpy(dst, src, nbytes);
  }
  void copy_to_host(void *dst, const void *src, size_t nbytes) override {
    std::memcpy(dst, src, nbytes);
  }
  DType pool_index_dtype(const Pool2dGeom &) const noexcept override { return MIXP_I64; }

  void copy(const View &, const View &) override { unreachable("copy"); }
  void fill(const View &, double) override { unreachable("fill"); }
  void causal_mask(const View &, int64_t, int64_t) override { unreachable("causal_mask"); }
  void unary(UnaryOp, const View &, const View &, double) override { unreachable("unary"); }
  void unary_backward(UnaryOp, const View &, const View &, const View &, const View &,
                      double) override {
    unreachable("unary_backward");
  }
  void binary(BinaryOp, const View &, const View &, const View &) override {
    unreachable("binary");
  }
  void sum_rows(const View &, int64_t, int64_t, const View &, double) override {
    unreachable("sum_rows");
  }
  void sum_cols(const View &, int64_t, int64_t, const View &, double) override {
    unreachable("sum_cols");
  }
  void max_dim(const View &, int64_t, int64_t, int64_t, const View *, const View &) override {
    unreachable("max_dim");
  }
  void softmax(const View &, int64_t, int64_t, int64_t, bool, const View &) override {
    unreachable("softmax");
  }
  void softmax_backward(const View &, const View &, int64_t, int64_t, int64_t, bool,
                        const View &) override {
    unreachable("softmax_backward");
  }
  void cross_entropy(const View &, const View &, int64_t, int64_t, int64_t, double,
                     const View &) override {
    unreachable("cross_entropy");
  }
  void cross_entropy_backward(const View &, const View &, int64_t, int64_t, int64_t, double,
                              const View &, const View &) override {
    unreachable("cross_entropy_backward");
  }
  void check_indices(const IndexCheck &, const View &, const View *) override {
    unreachable("check_indices");
  }
  void scatter_dim(const View &, const View &, int64_t, int64_t, int64_t, const View &) override {
    unreachable("scatter_dim");
  }
  void rand_uniform(const View &, uint64_t, uint64_t) override { unreachable("rand_uniform"); }
  void rand_normal(const View &, uint64_t, uint64_t) override { unreachable("rand_normal"); }
  void dropout_mask(const View &, double, uint64_t, uint64_t) override {
    unreachable("dropout_mask");
  }
  void count_values(const View &, double, double, ValueCounts *) override {
    unreachable("count_values");
  }
  void gemm(const GemmArgs &) override { unreachable("gemm"); }
  void scaled_gemm(const ScaledGemmArgs &) override { unreachable("scaled_gemm"); }
  void non_finite_check_and_unscale(const View *, int, const View &, const View &) override {
    unreachable("non_finite_check_and_unscale");
  }
  void update_scale(const ScaleUpdate &) override { unreachable("update_scale"); }
  void grad_norm_sq(const View *, int, const View &) override { unreachable("grad_norm_sq"); }
  void clip_coefficient(const View &, double, const View &, const View &, const View &) override {
    unreachable("clip_coefficient");
  }
  void scale_grads(const View *, int, const View &) override { unreachable("scale_grads"); }
  void sgd_step(const optim::ParamArgs *, int, const optim::SgdArgs &, const float *) override {
    unreachable("sgd_step");
  }
  void adam_step(const optim::ParamArgs *, int, const optim::AdamArgs &, const float *) override {
    unreachable("adam_step");
  }
  void conv2d(const Conv2dGeom &, const View &, const View &, const View *, const View &) override {
    unreachable("conv2d");
  }
  void conv2d_backward_data(const Conv2dGeom &, const View &, const View &, const View &) override {
    unreachable("conv2d_backward_data");
  }
  void conv2d_backward_weights(const Conv2dGeom &, const View &, const View &,
                               const View &) override {
    unreachable("conv2d_backward_weights");
  }
  void pool2d(const Pool2dGeom &, const View &, const View &, const View *) override {
    unreachable("pool2d");
  }
  void pool2d_backward(const Pool2dGeom &, const View &, const View *, const View &) override {
    unreachable("pool2d_backward");
  }
  void batch_norm_stats(const View &, int64_t, int64_t, int64_t, double, const View &, const View &,
                        const View &) override {
    unreachable("batch_norm_stats");
  }
  void batch_norm_forward(const View &, int64_t, int64_t, int64_t, const View &, const View &,
                          const View *, const View *, const View &) override {
    unreachable("batch_norm_forward");
  }
  void batch_norm_backward(const View &, const View &, int64_t, int64_t, int64_t, const View &,
                           const View &, const View *, bool, const View *, const View *,
                           const View *) override {
    unreachable("batch_norm_backward");
  }
  void group_norm_forward(const GroupNormGeom &, const View &, const View *, const View *, double,
                          const View &, const View &, const View &) override {
    unreachable("group_norm_forward");
  }
  void group_norm_backward(const GroupNormGeom &, const View &, const View &, const View &,
                           const View &, const View *, const View *, const View *,
                           const View *) override {
    unreachable("group_norm_backward");
  }
  void embedding(const View &, const View &, const View &) override { unreachable("embedding"); }
  void embedding_backward(const View &, const View &, int64_t, const View &) override {
    unreachable("embedding_backward");
  }
};

}  // namespace

extern "C" __attribute__((visibility("default"))) int mixp_backend_plugin_v2(
    uint32_t abi_version, mixp::OpTableIdentity *op_table, int device, mixp::Backend **out,
    char *msg, size_t msglen) {
  if (abi_version != mixp::kBackendAbiVersion) {
    std::snprintf(msg, msglen, "bare device plugin: ABI v%u asked for, built for v%u",
                  unsigned(abi_version), unsigned(mixp::kBackendAbiVersion));
    return MIXP_ERR_DEVICE;
  }
  *op_table = mixp::kOpTableIdentity;
  if (device != 0) {
    std::snprintf(msg, msglen, "bare device plugin: only device 0 (asked for %d)", device);
    return MIXP_ERR_DEVICE;
  }
  *out = new BareBackend();
  std::snprintf(msg, msglen, "bare device plugin (no optional capabilities)");
  return MIXP_OK;
}
