#include "backend/distributed/shm_communicator.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <random>

#include "backend/distributed/error_text.h"
#include "backend/distributed/shared_shards.h"
#include "backend/distributed/shm_segment.h"

namespace fs::distributed {
namespace {

using Parts = std::vector<const uint8_t*>;  // where each rank's publication lies

constexpr uint64_t kAlign = 64;

uint64_t alignUp(uint64_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

uint64_t bytesOf(const at::Tensor& t) {
  return static_cast<uint64_t>(t.numel()) * t.element_size();
}

at::Tensor viewOf(const uint8_t* p, int64_t n, at::ScalarType dtype) {
  return at::from_blob(const_cast<uint8_t*>(p), {n}, at::TensorOptions().dtype(dtype));
}

// Folds `part` into `acc` (both flat, one dtype).
void combine(at::Tensor& acc, const at::Tensor& part, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      acc.add_(part);
      break;
    case ReduceOp::kMax:
      at::maximum_out(acc, acc, part);
      break;
    case ReduceOp::kMin:
      at::minimum_out(acc, acc, part);
      break;
  }
}

std::string randomHex(int bytes) {
  std::random_device rd;
  std::string s;
  static const char* kHex = "0123456789abcdef";
  for (int i = 0; i < bytes; ++i) {
    const unsigned v = rd() & 0xff;
    s += kHex[v >> 4];
    s += kHex[v & 15];
  }
  return s;
}

class ShmCommunicator final : public Communicator, public std::enable_shared_from_this<ShmCommunicator> {
 public:
  ShmCommunicator(std::shared_ptr<Communicator> inner, std::unique_ptr<ShmSegment> seg, SharedMemoryOptions o)
      : inner_(std::move(inner)),
        seg_(std::move(seg)),
        options_(o),
        rank_(inner_->rank()),
        size_(inner_->size()) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backendName() const override { return inner_->backendName(); }

  void allReduce(at::Tensor& t, ReduceOp op, std::string_view what) override {
    TORCH_CHECK(t.is_contiguous(), "all_reduce: the tensor must be contiguous");
    if (viaInner(bytesOf(t))) return delegate("all_reduce", what, [&] { inner_->allReduce(t, op, what); });
    syncRun("all_reduce", what, [&](std::string w) { return issueAllReduce(t, op, std::move(w)); });
  }

  std::unique_ptr<PendingCollective> allReduceAsync(at::Tensor t, ReduceOp op, std::string what) override {
    TORCH_CHECK(t.is_contiguous(), "all_reduce: the tensor must be contiguous");
    if (viaInner(bytesOf(t))) {
      return delegate("all_reduce", what, [&] { return inner_->allReduceAsync(t, op, what); });
    }
    return asyncRun("all_reduce", std::move(what),
                    [&](std::string w) { return issueAllReduce(t, op, std::move(w)); });
  }

  void broadcast(at::Tensor& t, int root, std::string_view what) override {
    TORCH_CHECK(t.is_contiguous(), "broadcast: the tensor must be contiguous");
    TORCH_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is outside a group of ", size_);
    if (viaInner(bytesOf(t))) return delegate("broadcast", what, [&] { inner_->broadcast(t, root, what); });
    syncRun("broadcast", what, [&](std::string w) {
      const uint64_t bytes = bytesOf(t);
      std::vector<uint64_t> expect(size_, 0);
      expect[root] = bytes;
      const bool mine = root == rank_;
      return issue("broadcast", std::move(w), mine ? t.data_ptr() : nullptr, mine ? bytes : 0,
                   std::move(expect), [t, root, bytes, mine](const Parts& parts) mutable {
                     if (!mine) std::memcpy(t.data_ptr(), parts[root], bytes);
                   });
    });
  }

  void allGather(at::Tensor& out, const at::Tensor& in, std::string_view what) override {
    checkGatherArgs(out, in);
    if (viaInner(bytesOf(in))) return delegate("all_gather", what, [&] { inner_->allGather(out, in, what); });
    syncRun("all_gather", what, [&](std::string w) { return issueAllGather(out, in, std::move(w)); });
  }

  std::unique_ptr<PendingCollective> allGatherAsync(at::Tensor out, at::Tensor in,
                                                    std::string what) override {
    checkGatherArgs(out, in);
    if (viaInner(bytesOf(in))) {
      return delegate("all_gather", what, [&] { return inner_->allGatherAsync(out, in, what); });
    }
    return asyncRun("all_gather", std::move(what),
                    [&](std::string w) { return issueAllGather(out, in, std::move(w)); });
  }

  void reduceScatter(at::Tensor& out, const at::Tensor& in, ReduceOp op, std::string_view what) override {
    checkScatterArgs(out, in);
    if (viaInner(bytesOf(in))) {
      return delegate("reduce_scatter", what, [&] { inner_->reduceScatter(out, in, op, what); });
    }
    syncRun("reduce_scatter", what,
            [&](std::string w) { return issueReduceScatter(out, in, op, std::move(w)); });
  }

  std::unique_ptr<PendingCollective> reduceScatterAsync(at::Tensor out, at::Tensor in, ReduceOp op,
                                                        std::string what) override {
    checkScatterArgs(out, in);
    if (viaInner(bytesOf(in))) {
      return delegate("reduce_scatter", what, [&] { return inner_->reduceScatterAsync(out, in, op, what); });
    }
    return asyncRun("reduce_scatter", std::move(what),
                    [&](std::string w) { return issueReduceScatter(out, in, op, std::move(w)); });
  }

  void barrier(std::string_view what) override {
    syncRun("barrier", what, [&](std::string w) {
      return issue("barrier", std::move(w), nullptr, 0, std::vector<uint64_t>(size_, 0), [](const Parts&) {});
    });
  }

  void setFailureDescriber(std::function<std::string()> f) override {
    inner_->setFailureDescriber(f);  // its errors name the peers too
    Communicator::setFailureDescriber(std::move(f));
  }

  std::unique_ptr<SharedShards> shareShards(uint64_t bytes, std::string* why) override;

  std::shared_ptr<Communicator> split(const std::vector<std::vector<int>>& groups,
                                      const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    drainLocked();
    return inner_->split(groups, name);
  }

 private:
  // One collective issued on the segment and not yet completed by this rank.
  struct Op {
    uint64_t seq = 0;
    const char* op = "";
    std::string what;
    std::vector<uint64_t> expect;  // bytes each rank publishes
    std::function<void(const Parts&)> finish;
  };
  // One of this rank's publications still occupying arena space.
  struct Region {
    uint64_t seq, offset;
  };

  class Pending final : public PendingCollective {
   public:
    Pending(std::shared_ptr<ShmCommunicator> owner, uint64_t seq, const char* op, std::string what)
        : owner_(std::move(owner)), seq_(seq), op_(op), what_(std::move(what)) {}
    ~Pending() override {
      if (!owner_) return;
      try {  // peers may be waiting for this rank's completion to reuse their arenas
        owner_->completeThrough(seq_);
      } catch (
          const std::exception&) {  // NOLINT(bugprone-empty-catch): the caller never asked for the result
      }
    }
    void wait() override {
      if (!owner_) return;
      auto owner = std::move(owner_);
      CollectiveScope scope(owner->tracker_, std::string("wait ") + op_ + " " + what_);
      owner->completeThrough(seq_);
    }
    bool inputCopied() const override { return true; }

   private:
    std::shared_ptr<ShmCommunicator> owner_;
    uint64_t seq_;
    const char* op_;
    std::string what_;
  };

  bool viaInner(uint64_t bytes) const { return bytes > seg_->arenaBytes() / 2; }

  uint64_t issueAllGather(const at::Tensor& out, const at::Tensor& in, std::string what) {
    const at::Tensor src = in.contiguous();
    const uint64_t bytes = bytesOf(src);
    return issue("all_gather", std::move(what), src.data_ptr(), bytes, std::vector<uint64_t>(size_, bytes),
                 [out, bytes, size = size_](const Parts& parts) mutable {
                   auto* dst = static_cast<uint8_t*>(out.data_ptr());
                   for (int r = 0; r < size; ++r) std::memcpy(dst + r * bytes, parts[r], bytes);
                 });
  }

  uint64_t issueAllReduce(const at::Tensor& t, ReduceOp op, std::string what) {
    const uint64_t bytes = bytesOf(t);
    return issue("all_reduce", std::move(what), t.data_ptr(), bytes, std::vector<uint64_t>(size_, bytes),
                 [t, op, size = size_](const Parts& parts) mutable {
                   const int64_t n = t.numel();
                   const auto dtype = t.scalar_type();
                   at::Tensor flat = t.view({-1});
                   const bool widen = op == ReduceOp::kSum && (dtype == at::kBFloat16 || dtype == at::kHalf);
                   at::Tensor acc = widen ? viewOf(parts[0], n, dtype).to(at::kFloat) : flat;
                   if (!widen) flat.copy_(viewOf(parts[0], n, dtype));
                   for (int r = 1; r < size; ++r) combine(acc, viewOf(parts[r], n, dtype), op);
                   if (widen) flat.copy_(acc);
                 });
  }

  uint64_t issueReduceScatter(const at::Tensor& out, const at::Tensor& in, ReduceOp op, std::string what) {
    const at::Tensor src = in.contiguous();
    const uint64_t bytes = bytesOf(src);
    return issue("reduce_scatter", std::move(what), src.data_ptr(), bytes,
                 std::vector<uint64_t>(size_, bytes),
                 [out, op, size = size_, rank = rank_](const Parts& parts) mutable {
                   const int64_t n = out.numel();
                   const auto dtype = out.scalar_type();
                   const uint64_t skip = static_cast<uint64_t>(rank) * n * out.element_size();
                   at::Tensor acc = out.view({-1});
                   acc.copy_(viewOf(parts[0] + skip, n, dtype));
                   for (int r = 1; r < size; ++r) combine(acc, viewOf(parts[r] + skip, n, dtype), op);
                 });
  }

  template <class Issue>
  void syncRun(const char* op, std::string_view what, Issue&& issueIt) {
    CollectiveScope scope(tracker_, std::string(op) + (what.empty() ? "" : " ") + std::string(what));
    completeThrough(issueIt(std::string(what)));
  }

  template <class Issue>
  std::unique_ptr<PendingCollective> asyncRun(const char* op, std::string what, Issue&& issueIt) {
    uint64_t seq = 0;
    {
      CollectiveScope scope(tracker_, std::string(op) + (what.empty() ? "" : " ") + what);
      seq = issueIt(what);
    }
    return std::make_unique<Pending>(shared_from_this(), seq, op, std::move(what));
  }

  // Publishes this rank's part of the next collective (NOTE [Shared-memory transport]).
  uint64_t issue(const char* op, std::string what, const void* src, uint64_t bytes,
                 std::vector<uint64_t> expect, std::function<void(const Parts&)> finish) {
    std::lock_guard<std::mutex> lock(mu_);
    throwIfBroken(op, what);
    const uint64_t seq = nextSeq_;
    const uint64_t offset = reserveLocked(seq, bytes, op, what);
    if (bytes > 0) std::memcpy(seg_->arena(rank_) + offset, src, bytes);
    ShmRankControl& mine = seg_->control(rank_);
    mine.descriptors[seq % kShmDescriptors] = ShmDescriptor{seq, offset, bytes};
    mine.published.store(seq + 1);
    seg_->notifyAll();
    if (bytes > 0) {
      regions_.push_back(Region{seq, offset});
      head_ = alignUp(offset + bytes);
    }
    ++nextSeq_;
    pending_.push_back(Op{seq, op, std::move(what), std::move(expect), std::move(finish)});
    return seq;
  }

  void completeThrough(uint64_t seq) {
    std::lock_guard<std::mutex> lock(mu_);
    while (completed_ <= seq) {
      if (pending_.empty()) break;
      completeFrontLocked();
    }
  }

  void drainLocked() {
    while (!pending_.empty()) completeFrontLocked();
  }

  void completeFrontLocked() {
    Op& op = pending_.front();
    throwIfBroken(op.op, op.what);
    waitLocked(
        op.op, op.what,
        [&] {
          for (int r = 0; r < size_; ++r) {
            if (seg_->control(r).published.load() <= op.seq) return false;
          }
          return true;
        },
        [&] {
          std::string who;
          for (int r = 0; r < size_; ++r) {
            if (seg_->control(r).published.load() <= op.seq)
              who += (who.empty() ? "" : ", ") + std::to_string(r);
          }
          return "rank(s) " + who + " to join it";
        });
    Parts parts(size_);
    for (int r = 0; r < size_; ++r) {
      const ShmDescriptor d = seg_->control(r).descriptors[op.seq % kShmDescriptors];
      if (d.seq != op.seq || d.bytes != op.expect[r] || d.offset + d.bytes > seg_->arenaBytes()) {
        breakLocked(op.op, op.what,
                    "rank " + std::to_string(r) + " published " + std::to_string(d.bytes) +
                        " bytes as collective " + std::to_string(d.seq) + ", expected " +
                        std::to_string(op.expect[r]) + " bytes as " + std::to_string(op.seq) +
                        ": the ranks issued different collectives");
      }
      parts[r] = seg_->arena(r) + d.offset;
    }
    op.finish(parts);
    completed_ = op.seq + 1;
    seg_->control(rank_).completed.store(completed_);
    seg_->notifyAll();
    pending_.pop_front();
  }

  uint64_t slowestCompletion() const {
    uint64_t low = UINT64_MAX;
    for (int r = 0; r < size_; ++r) low = std::min(low, seg_->control(r).completed.load());
    return low;
  }

  // Where `bytes` of publication `seq` go: arena space and the descriptor
  // slot are free once every rank has completed what used them.
  uint64_t reserveLocked(uint64_t seq, uint64_t bytes, const char* op, const std::string& what) {
    for (;;) {
      const uint64_t low = slowestCompletion();
      while (!regions_.empty() && regions_.front().seq < low) regions_.pop_front();
      if (seq < low + kShmDescriptors) {
        if (bytes == 0) return head_;
        if (regions_.empty()) return 0;
        const uint64_t front = regions_.front().offset;
        const bool wrapped = regions_.back().offset < front;
        if (!wrapped && head_ + bytes <= seg_->arenaBytes()) return head_;
        if (!wrapped && bytes <= front) return 0;
        if (wrapped && head_ + bytes <= front) return head_;
      }
      // Full: complete our own reads first, so no peer waits on us.
      drainLocked();
      waitLocked(
          op, what, [&] { return slowestCompletion() > low; },
          [&] {
            std::string who;
            for (int r = 0; r < size_; ++r) {
              if (seg_->control(r).completed.load() <= low)
                who += (who.empty() ? "" : ", ") + std::to_string(r);
            }
            return "rank(s) " + who + " to finish collective " + std::to_string(low) + " (shared arena full)";
          });
    }
  }

  template <class Ready, class Describe>
  void waitLocked(const char* op, const std::string& what, Ready&& ready, Describe&& describe) {
    if (auto cause = waitOnSegment(*seg_, rank_, ready, describe, options_.timeout))
      breakLocked(op, what, *cause);
  }

  [[noreturn]] void breakLocked(const char* op, const std::string& what, const std::string& cause) {
    broken_ = cause;
    fail(op, what, tracker_.snapshot().seq, "shared memory: " + cause);
  }

  void throwIfBroken(const char* op, const std::string& what) const {
    if (!broken_.empty()) {
      fail(op, what, tracker_.snapshot().seq, "an earlier collective failed: shared memory: " + broken_);
    }
  }

  // A collective the shared segment does not carry, after every pending one; returns what `call` returns.
  template <class F>
  auto delegate(const char* op, std::string_view what, F&& call) -> decltype(call()) {
    CollectiveScope scope(tracker_, std::string(op) + " " + std::string(what));
    {
      std::lock_guard<std::mutex> lock(mu_);
      drainLocked();
    }
    return call();
  }

  std::shared_ptr<Communicator> inner_;
  std::unique_ptr<ShmSegment> seg_;
  SharedMemoryOptions options_;
  int rank_, size_;

  std::mutex mu_;
  uint64_t nextSeq_ = 0;
  uint64_t completed_ = 0;
  uint64_t head_ = 0;
  std::deque<Op> pending_;
  std::deque<Region> regions_;
  std::string broken_;
};

std::vector<uint8_t> bytesOfText(const std::string& s) {
  return {s.begin(), s.end()};
}
std::string textOf(const std::vector<uint8_t>& b) {
  return {b.begin(), b.end()};
}

// The segment's name and nonce travel from rank 0 in a fixed-size message over this group's own collectives.
std::unique_ptr<SharedShards> ShmCommunicator::shareShards(uint64_t total, std::string* why) {
  constexpr int64_t kMessage = 128;
  // As one arena per rank, end to end (SharedShards::data()).
  const uint64_t bytes = std::max<uint64_t>(alignUp((total + size_ - 1) / size_), kAlign);
  std::unique_ptr<ShmSegment> seg;
  std::string failure;
  at::Tensor message = at::zeros({kMessage}, at::kByte);
  if (rank_ == 0) {
    const std::string name = "/fs-shards-" + std::to_string(::getpid()) + "-" + randomHex(8);
    const std::string nonce = randomHex(16);
    try {
      seg = ShmSegment::create(name, size_, bytes, nonce);
      const std::string text = name + "\t" + nonce;
      std::memcpy(message.data_ptr(), text.data(), std::min<size_t>(text.size(), kMessage - 1));
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  broadcast(message, 0, "shared shards: the segment's name");
  const std::string text(static_cast<const char*>(message.data_ptr()));
  const auto tab = text.find('\t');
  if (rank_ != 0 && tab == std::string::npos) failure = "group rank 0 could not create the segment";
  if (rank_ != 0 && tab != std::string::npos) {
    try {
      seg = ShmSegment::open(text.substr(0, tab), size_, bytes, text.substr(tab + 1));
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (seg)
    seg->claim(rank_);  // before the agreement: a peer's first wait may already look for dead processes
  at::Tensor mapped = at::full({1}, seg ? 1 : 0, at::kInt);
  allReduce(mapped, ReduceOp::kMin, "shared shards: mapped");
  if (seg) seg->unlink();  // every member has mapped it or given up
  if (mapped.item<int>() == 0) {
    if (why) *why = failure.empty() ? "a peer could not map the shards' segment" : failure;
    return nullptr;
  }
  return std::make_unique<SharedShards>(std::move(seg), rank_, options_.timeout);
}

}  // namespace

std::shared_ptr<Communicator> offerSharedMemory(std::shared_ptr<Communicator> inner, c10d::Store& store,
                                                const std::string& prefix, const std::string& nodeKey,
                                                const SharedMemoryOptions& options, std::string* why) {
  const int rank = inner->rank();
  const int size = inner->size();
  auto declined = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return inner;
  };
  if (size < 2) return declined("a group of one rank");
  const std::string k = prefix + "shm/";
  store.set(k + "node/" + std::to_string(rank), bytesOfText(nodeKey));
  for (int r = 0; r < size; ++r) {
    const std::string theirs = textOf(store.get(k + "node/" + std::to_string(r)));
    if (theirs != nodeKey) {
      return declined("group rank " + std::to_string(r) + " is on " + theirs + ", this rank on " + nodeKey);
    }
  }
  std::unique_ptr<ShmSegment> seg;
  std::string failure;
  if (rank == 0) {
    const std::string name = "/fs-" + std::to_string(::getpid()) + "-" + randomHex(8);
    const std::string nonce = randomHex(16);
    try {
      seg = ShmSegment::create(name, size, options.arenaBytes, nonce);
      store.set(k + "segment", bytesOfText(name + "\t" + nonce));
    } catch (const std::exception& e) {
      failure = e.what();
      store.set(k + "segment", bytesOfText(""));
    }
  } else {
    const std::string text = textOf(store.get(k + "segment"));
    const auto tab = text.find('\t');
    if (tab == std::string::npos) {
      failure = "group rank 0 could not create the segment";
    } else {
      try {
        seg = ShmSegment::open(text.substr(0, tab), size, options.arenaBytes, text.substr(tab + 1));
      } catch (const std::exception& e) {
        failure = e.what();
      }
    }
  }
  if (seg) seg->claim(rank);  // before "mapped": a peer's first wait may already look for dead processes
  store.set(k + "mapped/" + std::to_string(rank), bytesOfText(failure.empty() ? "ok" : failure));
  std::string firstFailure;
  for (int r = 0; r < size; ++r) {
    const std::string v = textOf(store.get(k + "mapped/" + std::to_string(r)));
    if (v != "ok" && firstFailure.empty()) firstFailure = "group rank " + std::to_string(r) + ": " + v;
  }
  if (seg) seg->unlink();  // every member has mapped it or given up: the name is no longer needed
  if (!firstFailure.empty()) return declined(firstFailure);
  if (why) why->clear();
  return std::make_shared<ShmCommunicator>(std::move(inner), std::move(seg), options);
}

}  // namespace fs::distributed
