// The CPU backend: oneDNN for matrix products (AMX/AVX512-BF16 on bf16),
// OpenMP loops for the rest. One instance per session; the definitions are
// split by kernel family across the files of this folder.
#pragma once
#include <memory>

#include "backend/backend.hpp"

namespace mixp {

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
  void unary(UnaryOp op, const View &x, const View &y, double s) override;
  void unary_backward(UnaryOp op, const View &x, const View &y, const View &gy, const View &gx,
                      double s) override;
  void binary(BinaryOp op, const View &a, const View &b, const View &out) override;

  void sum_rows(const View &x, int64_t rows, int64_t cols, const View &out,
                double scale) override;
  void max_dim(const View &x, int64_t outer, int64_t n, int64_t inner, const View *values,
               const View &indices) override;
  void softmax(const View &x, int64_t outer, int64_t n, int64_t inner, bool log,
               const View &y) override;
  void softmax_backward(const View &y, const View &gy, int64_t outer, int64_t n, int64_t inner,
                        bool log, const View &gx) override;
  void cross_entropy(const View &logits, const View &target, int64_t n, int64_t c,
                     int64_t ignore_index, const View &losses) override;
  void cross_entropy_backward(const View &logits, const View &target, int64_t n, int64_t c,
                              int64_t ignore_index, const View &row_scale,
                              const View &glogits) override;

  void rand_uniform(const View &out, uint64_t seed, uint64_t offset) override;
  void rand_normal(const View &out, uint64_t seed, uint64_t offset) override;
  void dropout_mask(const View &mask, double p, uint64_t seed, uint64_t offset) override;

  void gemm(const GemmArgs &args) override;

 private:
  struct Dnnl;  // oneDNN engine, stream and primitive cache (cpu/gemm.cpp)
  std::unique_ptr<Dnnl> dnnl_;
};

}  // namespace mixp
