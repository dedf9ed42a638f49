// Appends ops to a sim::Program (internal to workloads/): fills phase, layer and microbatch
// from the current context, computes GEMM and attention FLOPs, and tracks the last op of the
// compute stream so that communication can be ordered after the compute that launches it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace.hpp"

namespace clustersim::workloads {

/// Builder of one program. Every dependency it is given must be an earlier op.
class ProgramBuilder {
 public:
  /// Appends to `program` (kept by reference; must outlive the builder).
  explicit ProgramBuilder(sim::Program& program) : program_(program) {}

  /// Phase, layer and microbatch of the ops added from now on.
  void set_context(sim::Phase phase, int layer, int microbatch);
  /// Layer of the ops added from now on (-1 for embedding, head, optimizer).
  void set_layer(int layer) { layer_ = layer; }
  /// FP8 GEMMs added from now on scale their operands in blocks (sim::Fp8Scaling: gemm() as
  /// Block2D1D, wgrad() as Block1D1D; Transformer Engine's Float8BlockScaling), or per tensor.
  void set_fp8_block_scaling(bool block) { fp8_block_ = block; }
  /// Marks the ops added from now on as recomputed forward work (Op::recompute).
  void set_recompute(bool recompute) { recompute_ = recompute; }
  /// The next op added to the compute stream also depends on `op` (a communication that runs
  /// alongside the compute op added in between, e.g. an overlapped TP collective).
  void defer(std::uint32_t op) { deferred_.push_back(op); }

  /// Adds an op and returns its index. @throws std::logic_error if a dep is not earlier.
  std::uint32_t add(sim::OpShape shape, sim::Stream stream, const std::string& label, double flops,
                    double bytes, std::vector<std::uint32_t> deps = {});
  /// GEMM C[m,n] = A[m,k] B[k,n] on the compute stream. Bytes: A and B read in `dtype`, C
  /// written with `out_bytes` per element.
  std::uint32_t gemm(const std::string& label, std::int64_t m, std::int64_t n, std::int64_t k,
                     sim::DType dtype, double out_bytes, std::vector<std::uint32_t> deps = {});
  /// Weight-gradient GEMM dW[in, out] written as (m, n, k) = (in, out, tokens) on the compute
  /// stream, its output written (accum None: a new BF16 tensor, 2 B per element) or added into
  /// main_grad (sim::GemmShape::grad_accum: F32 reads and writes 8 B per element, BF16 4 B).
  std::uint32_t wgrad(const std::string& label, std::int64_t in, std::int64_t out,
                      std::int64_t tokens, sim::DType dtype, sim::GradAccum accum,
                      std::vector<std::uint32_t> deps = {});
  /// Sets how TE's TP overlap runs GEMM op `op` (sim::GemmShape::splits, sm_margin, busy_sms).
  /// @throws std::logic_error if `op` is not a GEMM, splits < 1, sm_margin < 0 or busy_sms < 0.
  void set_gemm_execution(std::uint32_t op, int splits, int sm_margin, int busy_sms);
  /// Makes GEMM op `op` `groups` GEMMs splitting `axis` (sim::GemmShape::groups: a MoE rank's
  /// local experts). @throws std::logic_error if `op` is not a GEMM, groups < 1 or groups exceeds
  /// the dimension it splits (the trace reader's bound).
  void set_gemm_groups(std::uint32_t op, int groups, sim::GroupAxis axis);
  /// Fused attention on the compute stream; `bytes` is its HBM traffic.
  std::uint32_t attention(const std::string& label, const sim::AttentionShape& shape, double bytes);
  /// Memory-bound kernel on the compute stream moving `bytes`.
  std::uint32_t mem(const std::string& label, sim::MemKernel kernel, double bytes,
                    std::vector<std::uint32_t> deps = {});
  /// Host-side kernel (sim::is_host_kernel) in the compute stream's order, run by the rank's
  /// host `threads`, moving `bytes` (host memory or PCIe, per kernel). @throws std::logic_error
  /// if `kernel` is not a host kernel.
  std::uint32_t host(const std::string& label, sim::MemKernel kernel, sim::HostThreads threads,
                     double bytes, std::vector<std::uint32_t> deps = {});
  /// Collective of `bytes` per rank (NCCL buffer size as sim/trace.hpp defines it).
  std::uint32_t collective(const std::string& label, sim::CollectiveKind kind, sim::GroupKind group,
                           sim::Stream stream, double bytes, std::vector<std::uint32_t> deps = {});
  /// MoE token dispatch or combine (sim::CollectiveKind::TokenExchange) over `group`: `bytes`
  /// of the rank's tokens once each, routed as `routing` says.
  std::uint32_t token_exchange(const std::string& label, sim::GroupKind group, sim::Stream stream,
                               double bytes, const sim::TokenRouting& routing,
                               std::vector<std::uint32_t> deps = {});
  /// Batched pipeline exchange, `bytes` per transfer (on the compute stream unless `stream`).
  std::uint32_t p2p(const std::string& label, sim::Peer send_to, sim::Peer recv_from, double bytes,
                    sim::Stream stream = sim::Stream::Compute, std::vector<std::uint32_t> deps = {});

  /// Index of the last op added to the compute stream, if any (never a deferred weight gradient).
  std::optional<std::uint32_t> last_compute() const { return last_compute_; }
  /// last_compute() as a dependency list: what an op launched after the compute so far waits for.
  std::vector<std::uint32_t> after_last_compute() const {
    return last_compute_ ? std::vector<std::uint32_t>{*last_compute_} : std::vector<std::uint32_t>{};
  }
  /// The last weight-gradient op added by wgrad(), if any (deferred or not).
  std::optional<std::uint32_t> last_wgrad() const { return last_wgrad_; }

  // Zero-bubble W passes (ScheduleStep::defer_wgrad). Between begin_deferred_wgrads() and
  // end_deferred_wgrads() every op added by wgrad(), every op added inside a
  // WgradInputScope and every op that depends on such an op is held back in a new W group
  // instead of the program; its index is a placeholder (kDeferredBit set) that ops, deps and
  // set_gemm_* accept like any index, and that stays valid once the group is placed. Placing a
  // group (place_oldest_wgrads) appends its ops in their order, with the context they were added
  // in, at the program's end. Callers never compare placeholders with real indices.

  /// Bit that marks a placeholder index of a held-back op.
  static constexpr std::uint32_t kDeferredBit = 1u << 31;
  /// Starts holding back the weight gradients of the pass built next.
  /// @throws std::logic_error if already holding back.
  void begin_deferred_wgrads();
  /// Ends it; the group waits for place_oldest_wgrads().
  void end_deferred_wgrads();
  /// Appends the oldest waiting W group to the program. @throws std::logic_error if none waits.
  void place_oldest_wgrads();
  /// W groups held back and not yet placed.
  std::size_t waiting_wgrad_groups() const { return groups_.size(); }
  /// While alive, ops added while the builder holds back weight gradients are held back too
  /// (e.g. the all-gather of a sequence-parallel input that only the weight gradient reads).
  class WgradInputScope {
   public:
    explicit WgradInputScope(ProgramBuilder& b) : b_(b), was_(b.capture_all_) { b_.capture_all_ = true; }
    ~WgradInputScope() { b_.capture_all_ = was_; }
    WgradInputScope(const WgradInputScope&) = delete;
    WgradInputScope& operator=(const WgradInputScope&) = delete;

   private:
    ProgramBuilder& b_;
    bool was_;
  };
  /// Number of ops so far.
  std::size_t size() const { return program_.ops.size(); }
  /// Number of GEMMs in `dtype` among the ops from index `first` on (recomputed ones excluded).
  std::size_t gemms_since(std::size_t first, sim::DType dtype) const;

 private:
  /// A GEMM on the compute stream, its FP8 operands scaled as `block` when FP8 GEMMs are
  /// block-scaled; bytes as gemm() says.
  std::uint32_t add_gemm(const std::string& label, sim::GemmShape shape, sim::Fp8Scaling block,
                         double out_bytes, std::vector<std::uint32_t> deps);

  /// The op behind index or placeholder `id`. @throws std::logic_error for an unknown id.
  sim::Op& op_at(std::uint32_t id);
  /// `deps` with placed placeholders replaced by real indices; true when one still waits.
  bool resolve(std::vector<std::uint32_t>& deps) const;
  /// Appends a built op to the program. @throws std::logic_error if a dep is not earlier.
  std::uint32_t append(sim::Op op);

  struct HeldOp {
    sim::Op op;
    std::uint32_t seq = 0;  ///< placeholder number (index into placed_)
  };
  sim::Program& program_;
  bool holding_ = false;      ///< between begin_ and end_deferred_wgrads
  bool capture_all_ = false;  ///< inside a WgradInputScope
  std::deque<std::vector<HeldOp>> groups_;  ///< W groups waiting, oldest first
  std::vector<std::uint32_t> placed_;       ///< real index of each placeholder; kUnplaced until placed
  std::vector<std::uint32_t> group_of_seq_; ///< W group number of each placeholder
  std::vector<std::uint32_t> index_of_seq_; ///< its position in that group
  std::uint32_t first_group_ = 0;           ///< number of groups_.front()
  bool adding_wgrad_ = false;               ///< inside wgrad()
  std::optional<std::uint32_t> last_wgrad_;
  sim::Phase phase_ = sim::Phase::Forward;
  int layer_ = -1;
  int microbatch_ = -1;
  bool recompute_ = false;
  bool fp8_block_ = false;
  std::vector<std::uint32_t> deferred_;
  std::optional<std::uint32_t> last_compute_;
};

}  // namespace clustersim::workloads
