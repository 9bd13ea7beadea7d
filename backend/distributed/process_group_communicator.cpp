#include "backend/distributed/process_group_communicator.h"

#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifdef FS_WITH_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <functional>
#include <memory>
#include <type_traits>

#include "backend/distributed/error_text.h"
#include "backend/distributed/shm_communicator.h"

namespace fs::distributed {
namespace {

c10d::ReduceOp toC10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return c10d::ReduceOp(c10d::ReduceOp::SUM);
    case ReduceOp::kMax:
      return c10d::ReduceOp(c10d::ReduceOp::MAX);
    case ReduceOp::kMin:
      return c10d::ReduceOp(c10d::ReduceOp::MIN);
  }
  return c10d::ReduceOp(c10d::ReduceOp::SUM);
}

void checkFlat(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.is_contiguous(), op, ": the tensor must be contiguous");
}

// NOTE [bfloat16 over Gloo]: LibTorch 1.13's Gloo process group rejects
// bfloat16 ("Invalid scalar type") in every collective. Collectives that
// only move bytes (all-gather, all-to-all, broadcast) send bfloat16 as the
// float16 with the same bits (Gloo copies them; it has no int16 either); a sum / max / min over ranks runs in
// float32 and is rounded back once (reduceScatter reduces locally, in bfloat16, in rank order). NCCL takes
// bfloat16 as it is.
template <class PG>
constexpr bool kGloo = std::is_same_v<PG, c10d::ProcessGroupGloo>;

template <class PG>
at::Tensor onWire(const at::Tensor& t) {
  if constexpr (kGloo<PG>) {
    if (t.scalar_type() == at::kBFloat16) return t.view(at::kHalf);
  }
  return t;
}

// What allReduce hands the process group: the tensor itself, or a float32 copy to be written back.
template <class PG>
at::Tensor reducible(const at::Tensor& t) {
  if constexpr (kGloo<PG>) {
    if (t.scalar_type() == at::kBFloat16) return t.to(at::kFloat);
  }
  return t;
}

// allGather's arguments as Gloo's list all-gather takes them: views of the flat output.
template <class PG>
struct GatherArgs {
  std::vector<std::vector<at::Tensor>> outputs{1};
  std::vector<at::Tensor> inputs;
  // REQUIRES: Communicator::checkGatherArgs passed.
  GatherArgs(const at::Tensor& out, const at::Tensor& in, int size) {
    const int64_t n = in.numel();
    const at::Tensor flat = onWire<PG>(out.view({-1}));
    for (int r = 0; r < size; ++r) outputs[0].push_back(flat.narrow(0, r * n, n));
    inputs.push_back(onWire<PG>(in.contiguous().view({-1})));
  }
};

// reduceScatter as an all-to-all of the input chunks, then a local reduction
// in rank order (NOTE [Collectives on Debian's LibTorch 1.13] in communicator.h).
template <class PG>
struct ScatterArgs {
  at::Tensor out, send, recv;
  ReduceOp op;
  int size;
  std::vector<int64_t> counts;  // empty: equal splits
  ScatterArgs(const at::Tensor& o, const at::Tensor& in, ReduceOp reduce, int groupSize)
      : out(o), op(reduce), size(groupSize) {  // REQUIRES: Communicator::checkScatterArgs passed
    send = in.contiguous().view({-1});
    recv = at::empty_like(send);
  }
  c10::intrusive_ptr<c10d::Work> issue(PG& pg) {
    at::Tensor r = onWire<PG>(recv), s = onWire<PG>(send);
    return pg.alltoall_base(r, s, counts, counts);
  }
  void reduceLocally() {
    const int64_t n = out.numel();
    at::Tensor acc = out.view({-1});
    acc.copy_(recv.narrow(0, 0, n));
    for (int r = 1; r < size; ++r) {
      const at::Tensor part = recv.narrow(0, r * n, n);
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
  }
};

// PG is ProcessGroupGloo or ProcessGroupNCCL: a ProcessGroup in LibTorch
// 1.13, a Backend in 2.x; the collective methods are the same in both.
template <class PG>
class PgCommunicator final : public Communicator, public std::enable_shared_from_this<PgCommunicator<PG>> {
 public:
  PgCommunicator(c10::intrusive_ptr<c10d::Store> store, std::string prefix, c10::intrusive_ptr<PG> pg,
                 int rank, int size, GroupOptions options)
      : store_(std::move(store)),
        prefix_(std::move(prefix)),
        pg_(std::move(pg)),
        rank_(rank),
        size_(size),
        options_(std::move(options)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backendName() const override { return options_.backend; }

  void allReduce(at::Tensor& t, ReduceOp op, std::string_view what) override {
    checkFlat(t, "all_reduce");
    at::Tensor r = reducible<PG>(t);
    run("all_reduce", what, [&] {
      std::vector<at::Tensor> ts{r};
      c10d::AllreduceOptions o;
      o.reduceOp = toC10d(op);
      return pg_->allreduce(ts, o);
    });
    if (!r.is_same(t)) t.copy_(r);
  }

  std::unique_ptr<PendingCollective> allReduceAsync(at::Tensor t, ReduceOp op, std::string what) override {
    checkFlat(t, "all_reduce");
    at::Tensor r = reducible<PG>(t);
    std::function<void()> writeBack;
    if (!r.is_same(t)) writeBack = [t, r]() mutable { t.copy_(r); };
    return start(
        "all_reduce", std::move(what),
        [&] {
          std::vector<at::Tensor> ts{r};
          c10d::AllreduceOptions o;
          o.reduceOp = toC10d(op);
          return pg_->allreduce(ts, o);
        },
        std::move(writeBack));
  }

  void broadcast(at::Tensor& t, int root, std::string_view what) override {
    checkFlat(t, "broadcast");
    TORCH_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is outside a group of ", size_);
    run("broadcast", what, [&] {
      std::vector<at::Tensor> ts{onWire<PG>(t)};
      c10d::BroadcastOptions o;
      o.rootRank = root;
      return pg_->broadcast(ts, o);
    });
  }

  void allGather(at::Tensor& out, const at::Tensor& in, std::string_view what) override {
    checkGatherArgs(out, in);
    GatherArgs<PG> g(out, in, size_);
    run("all_gather", what, [&] { return pg_->allgather(g.outputs, g.inputs); });
  }

  std::unique_ptr<PendingCollective> allGatherAsync(at::Tensor out, at::Tensor in,
                                                    std::string what) override {
    checkGatherArgs(out, in);
    GatherArgs<PG> g(out, in, size_);
    return start("all_gather", std::move(what), [&] { return pg_->allgather(g.outputs, g.inputs); });
  }

  void reduceScatter(at::Tensor& out, const at::Tensor& in, ReduceOp op, std::string_view what) override {
    checkScatterArgs(out, in);
    ScatterArgs<PG> a(out, in, op, size_);
    run("reduce_scatter", what, [&] { return a.issue(*pg_); });
    a.reduceLocally();
  }

  std::unique_ptr<PendingCollective> reduceScatterAsync(at::Tensor out, at::Tensor in, ReduceOp op,
                                                        std::string what) override {
    checkScatterArgs(out, in);
    auto a = std::make_shared<ScatterArgs<PG>>(out, in, op, size_);
    return start(
        "reduce_scatter", std::move(what), [&] { return a->issue(*pg_); }, [a] { a->reduceLocally(); });
  }

  void barrier(std::string_view what) override {
    run("barrier", what, [&] { return pg_->barrier(c10d::BarrierOptions()); });
  }

  std::shared_ptr<Communicator> split(const std::vector<std::vector<int>>& groups,
                                      const std::string& name) override {
    const std::string key = prefix_ + "split/" + name + "#" + std::to_string(splits_++) + "/";
    for (size_t g = 0; g < groups.size(); ++g) {
      const auto& members = groups[g];
      const auto it = std::find(members.begin(), members.end(), rank_);
      if (it == members.end()) continue;
      const int groupRank = static_cast<int>(it - members.begin());
      return makeProcessGroupCommunicator(store_, key + std::to_string(g) + "/", groupRank,
                                          static_cast<int>(members.size()), options_);
    }
    TORCH_CHECK(false, "split '", name, "': rank ", rank_, " is in none of the ", groups.size(), " groups");
  }

 private:
  class Pending final : public PendingCollective {
   public:
    Pending(std::shared_ptr<PgCommunicator> owner, c10::intrusive_ptr<c10d::Work> work, const char* op,
            std::string what, int64_t seq, std::function<void()> finish)
        : owner_(std::move(owner)),
          work_(std::move(work)),
          op_(op),
          what_(std::move(what)),
          seq_(seq),
          finish_(std::move(finish)) {}
    ~Pending() override {
      if (!work_) return;
      try {  // the collective writes into tensors the caller may free next: let it end first
        work_->wait();
      } catch (
          const std::exception&) {  // NOLINT(bugprone-empty-catch): the caller never asked for the result
      }
    }
    void wait() override {
      if (!work_) return;
      CollectiveScope scope(owner_->tracker_, std::string("wait ") + op_ + " " + what_);
      try {
        work_->wait();
      } catch (const std::exception& e) {
        work_.reset();
        owner_->fail(op_, what_, seq_, firstPart(e.what()));
      }
      work_.reset();
      if (finish_) finish_();
    }

   private:
    std::shared_ptr<PgCommunicator> owner_;
    c10::intrusive_ptr<c10d::Work> work_;
    const char* op_;
    std::string what_;
    int64_t seq_;
    std::function<void()> finish_;
  };

  // Issues a collective; `finish` runs after it completes, inside wait().
  template <class F>
  std::unique_ptr<PendingCollective> start(const char* op, std::string what, F&& issue,
                                           std::function<void()> finish = {}) {
    const int64_t seq = tracker_.enter(std::string(op) + (what.empty() ? "" : " ") + what);
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = issue();
    } catch (const std::exception& e) {
      tracker_.leave();
      fail(op, what, seq, firstPart(e.what()));
    }
    tracker_.leave();
    return std::make_unique<Pending>(this->shared_from_this(), std::move(work), op, std::move(what), seq,
                                     std::move(finish));
  }

  template <class F>
  void run(const char* op, std::string_view what, F&& issue) {
    const int64_t seq = tracker_.enter(std::string(op) + (what.empty() ? "" : " ") + std::string(what));
    try {
      auto work = issue();
      work->wait();
    } catch (const std::exception& e) {
      tracker_.leave();
      fail(op, what, seq, firstPart(e.what()));
    }
    tracker_.leave();
  }

  c10::intrusive_ptr<c10d::Store> store_;
  std::string prefix_;
  c10::intrusive_ptr<PG> pg_;
  int rank_;
  int size_;
  GroupOptions options_;
  int splits_ = 0;
};

}  // namespace

std::shared_ptr<Communicator> makeProcessGroupCommunicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                           const std::string& prefix, int rank, int size,
                                                           const GroupOptions& options) {
  auto scoped = c10::make_intrusive<c10d::PrefixStore>(prefix + "pg", store);
  try {
    if (options.backend == "gloo") {
      auto o = c10d::ProcessGroupGloo::Options::create(options.timeout);
      o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(options.bindAddress));
      auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(scoped, rank, size, o);
      std::shared_ptr<Communicator> gloo = std::make_shared<PgCommunicator<c10d::ProcessGroupGloo>>(
          store, prefix, std::move(pg), rank, size, options);
      if (!options.sharedMemory || size < 2) return gloo;
      SharedMemoryOptions shm;
      shm.arenaBytes = options.sharedMemoryArenaBytes;
      shm.timeout = options.timeout;
      std::string why;
      auto offered = offerSharedMemory(gloo, *store, prefix, options.nodeKey, shm, &why);
      offered->setTransport(why.empty() ? "gloo + shared memory" : "gloo (no shared memory: " + why + ")");
      return offered;
    }
#ifdef FS_WITH_CUDA
    if (options.backend == "nccl") {
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = options.timeout;
      auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(scoped, rank, size, o);
      return std::make_shared<PgCommunicator<c10d::ProcessGroupNCCL>>(store, prefix, std::move(pg), rank,
                                                                      size, options);
    }
#endif
  } catch (const CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    throw CollectiveError("joining the " + options.backend + " process group as rank " +
                          std::to_string(rank) + " of " + std::to_string(size) +
                          " failed: " + firstPart(e.what()));
  }
  throw CollectiveError("parallel.dist_backend: '" + options.backend + "' is not available in this build" +
                        (options.backend == "nccl" ? " (built without CUDA)" : ""));
}

}  // namespace fs::distributed
