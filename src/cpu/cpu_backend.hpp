// The CPU backend: oneDNN for matrix products (AMX/AVX512-BF16 on bf16),
// OpenMP loops for the rest. One instance per session; the definitions are
// split by kernel family across the files of this folder.
#pragma once
#include <memory>

#include "backend/backend.hpp"

namespace mixp {
namespace cpu {
class BlockCache;
}
namespace cpu {
struct ConvCache;  // cpu/conv_paths.hpp
}

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;
  const char *name() const noexcept override { return "cpu"; }

  void *allocate(size_t nbytes) override;
  void deallocate(void *p, size_t nbytes) noexcept override;
  void copy_from_host(void *dst, const void *src, size_t nbytes) override;
  void copy_to_host(void *dst, const void *src, size_t nbytes) override;

  void copy(const View &src, const View &dst) override;
  void fill(const View &dst, double value) override;
  void causal_mask(const View &dst, int64_t rows, int64_t cols) override;
  void unary(UnaryOp op, const View &x, const View &y, double s) override;
  void unary_backward(UnaryOp op, const View &x, const View &y, const View &gy, const View &gx,
                      double s) override;
  void binary(BinaryOp op, const View &a, const View &b, const View &out) override;

  void sum_rows(const View &x, int64_t rows, int64_t cols, const View &out,
                double scale) override;
  void sum_cols(const View &x, int64_t rows, int64_t cols, const View &out, double scale) override;
  void max_dim(const View &x, int64_t outer, int64_t n, int64_t inner, const View *values,
               const View &indices) override;
  void softmax(const View &x, int64_t outer, int64_t n, int64_t inner, bool log,
               const View &y) override;
  void softmax_backward(const View &y, const View &gy, int64_t outer, int64_t n, int64_t inner,
                        bool log, const View &gx) override;
  void cross_entropy(const View &logits, const View &target, int64_t n, int64_t c,
                     int64_t ignore_index, double label_smoothing, const View &losses) override;
  void cross_entropy_backward(const View &logits, const View &target, int64_t n, int64_t c,
                              int64_t ignore_index, double label_smoothing, const View &row_scale,
                              const View &glogits) override;
  // cpu/indices.cpp
  void check_indices(const IndexCheck &chk, const View &indices, const View *inv_count) override;
  void scatter_dim(const View &src, const View &indices, int64_t outer, int64_t n, int64_t inner,
                   const View &dst) override;

  void rand_uniform(const View &out, uint64_t seed, uint64_t offset) override;
  void rand_normal(const View &out, uint64_t seed, uint64_t offset) override;
  void dropout_mask(const View &mask, double p, uint64_t seed, uint64_t offset) override;

  void count_values(const View &x, double tiny_below, double huge_from, ValueCounts *out) override;

  void gemm(const GemmArgs &args) override;
  void scaled_gemm(const ScaledGemmArgs &args) override;  // cpu/scaled_gemm.cpp

  void sgd_step(const optim::ParamArgs *params, int count, const optim::SgdArgs &args,
                const float *found_inf) override;
  void adam_step(const optim::ParamArgs *params, int count, const optim::AdamArgs &args,
                 const float *found_inf) override;

  void non_finite_check_and_unscale(const View *grads, int n, const View &found_inf,
                                    const View &inv_scale) override;
  void update_scale(const ScaleUpdate &u) override;
  void grad_norm_sq(const View *grads, int n, const View &out) override;
  void clip_coefficient(const View &norm_sq, double max_norm, const View &total_norm,
                        const View &coef, const View &found_inf) override;
  void scale_grads(const View *grads, int n, const View &coef) override;

  // convolution (cpu/conv.cpp, conv_dnnl.cpp) and pooling (cpu/pool_forward.cpp,
  // pool_backward.cpp)
  void conv2d(const Conv2dGeom &g, const View &x, const View &w, const View *bias,
              const View &y) override;
  void conv2d_backward_data(const Conv2dGeom &g, const View &gy, const View &w,
                            const View &gx) override;
  void conv2d_backward_weights(const Conv2dGeom &g, const View &x, const View &gy,
                               const View &gw) override;
  void pool2d(const Pool2dGeom &g, const View &x, const View &y, const View *indices) override;
  DType pool_index_dtype(const Pool2dGeom &g) const noexcept override;
  void pool2d_backward(const Pool2dGeom &g, const View &gy, const View *indices,
                       const View &gx) override;

  // normalisation (cpu/batch_norm.cpp, batch_norm_nhwc.cpp, group_norm.cpp) and
  // embedding (cpu/embedding.cpp)
  void batch_norm_stats(const View &x, int64_t outer, int64_t c, int64_t inner, double eps,
                        const View &mean, const View &var, const View &invstd) override;
  void batch_norm_forward(const View &x, int64_t outer, int64_t c, int64_t inner,
                          const View &mean, const View &invstd, const View *weight,
                          const View *bias, const View &y) override;
  void batch_norm_backward(const View &x, const View &gy, int64_t outer, int64_t c,
                           int64_t inner, const View &mean, const View &invstd,
                           const View *weight, bool batch_stats, const View *gx, const View *gw,
                           const View *gb) override;
  void group_norm_forward(const GroupNormGeom &g, const View &x, const View *weight,
                          const View *bias, double eps, const View &y, const View &mean,
                          const View &rstd) override;
  void group_norm_backward(const GroupNormGeom &g, const View &x, const View &gy,
                           const View &mean, const View &rstd, const View *weight,
                           const View *gx, const View *gw, const View *gb) override;
  void embedding(const View &weight, const View &indices, const View &out) override;
  void embedding_backward(const View &gy, const View &indices, int64_t padding_idx,
                          const View &gw) override;

  // The optional capabilities are declined (Backend's defaults): no device
  // collectives (the communicator moves CPU memory through its host
  // transport), no device clock (the work runs during each call), no memory
  // figures beyond the session's tensor counts (scratch is C++ heap).

  // Fused attention (cpu/flash_attention.cpp, cpu/flash_attention_backward.cpp).
  bool attention_forward(const AttentionArgs &a) override;
  bool attention_backward(const AttentionArgs &a) override;

 private:
  struct Dnnl;  // oneDNN engine, stream and primitive cache (cpu/gemm.cpp)
  std::unique_ptr<Dnnl> dnnl_;
  // A half product computed in fp32 and rounded once (cpu/gemm.cpp).
  template <class H>
  void gemm_widened(const GemmArgs &g);
  void gemm_half(const GemmArgs &g);
  // p = a x b for contiguous bf16 a [m, k] and b [k, n] into a contiguous
  // fp32 p [m, n], k > 0: the scaled products' kernel (cpu/gemm.cpp).
  void gemm_bf16_into_f32(const bf16 *a, const bf16 *b, float *p, int64_t m, int64_t n, int64_t k);
  std::unique_ptr<cpu::BlockCache> blocks_;  // freed blocks for reuse (cpu/block_cache.hpp)
  // oneDNN convolution primitives per geometry (cpu/conv_paths.hpp); created on
  // first use. A shared_ptr so that this header needs no definition of it.
  std::shared_ptr<cpu::ConvCache> conv_cache_;
  cpu::ConvCache &conv_cache();
};

}  // namespace mixp
