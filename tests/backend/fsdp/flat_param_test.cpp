// FlatParameter on 1-3 ranks (threads over real Gloo): shards hold the right
// chunks with padding; gather / free / gather round-trips the values; and
// the mechanism FSDP rests on: a small MLP whose units are freed after their
// forward and gathered again from a hook on their output's gradient trains
// to the same gradients as the unsharded model (autograd's saved weights are
// valid again after the storage was freed and refilled).
#include "backend/fsdp/flat_param.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <mutex>

#include "tests/backend/distributed/thread_ranks.h"

namespace fs::fsdp {
namespace {

// The ranks are threads sharing torch's generator: seeding and drawing happen under one lock.
std::mutex& rngMutex() {
  static std::mutex mu;
  return mu;
}

// Odd sizes so every flat parameter needs padding for 2 and 3 ranks.
struct Mlp : torch::nn::Module {
  Mlp() {
    std::lock_guard<std::mutex> lock(rngMutex());
    torch::manual_seed(7);
    a = register_module("a", torch::nn::Linear(7, 13));
    b = register_module("b", torch::nn::Linear(13, 5));
    c = register_module("c", torch::nn::Linear(5, 3));
  }
  torch::nn::Linear a{nullptr}, b{nullptr}, c{nullptr};
  std::vector<torch::nn::Linear> layers() { return {a, b, c}; }
};

std::vector<FlatMember> membersOf(torch::nn::Module& m, const std::string& prefix) {
  std::vector<FlatMember> out;
  for (auto& p : m.named_parameters()) out.push_back({prefix + "." + p.key(), p.value()});
  return out;
}

torch::Tensor globalInput() {
  std::lock_guard<std::mutex> lock(rngMutex());
  torch::manual_seed(11);
  return torch::randn({6, 7});
}

TEST(FlatParameterTest, ShardsPadAndRoundTrip) {
  for (int world : {1, 2, 3}) {
    std::mutex mu;
    const auto errors = testing::runThreadRanks(world, [&](distributed::Communicator& comm) {
      Mlp model;
      Mlp reference;
      FlatParameter flat(membersOf(*model.a, "a"), comm.rank(), comm.size());
      const int64_t n = 7 * 13 + 13;
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_EQ(flat.numel(), n);
      EXPECT_EQ(flat.shardNumel(), (n + world - 1) / world);
      EXPECT_EQ(flat.padding(), flat.shardNumel() * world - n);
      // A group of one views its shard: always "gathered", never counted as gathered memory.
      EXPECT_EQ(flat.gathered(), world == 1);
      EXPECT_EQ(flat.gatheredBytes(), 0);
      // This rank's chunk of weight-then-bias, zeros in the padding.
      torch::Tensor all = torch::cat({reference.a->weight.detach().reshape({-1}), reference.a->bias.detach(),
                                      torch::zeros({flat.padding()})});
      EXPECT_TRUE(
          torch::equal(flat.shard(), all.narrow(0, comm.rank() * flat.shardNumel(), flat.shardNumel())));
      EXPECT_TRUE(flat.shard().requires_grad());
    });
    for (const auto& e : errors) ASSERT_EQ(e, "") << "world " << world;
  }
  // Gather, free, gather again: the values come back, the bytes go and return.
  for (int world : {1, 3}) {
    std::mutex mu;
    const auto errors = testing::runThreadRanks(world, [&](distributed::Communicator& comm) {
      Mlp model;
      Mlp reference;
      FlatParameter flat(membersOf(*model.b, "b"), comm.rank(), comm.size());
      for (int round = 0; round < 2; ++round) {
        flat.gather(comm, "test gather");
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_EQ(flat.gatheredBytes(), world == 1 ? 0 : flat.paddedNumel() * 4);
        EXPECT_TRUE(torch::equal(model.b->weight, reference.b->weight)) << "round " << round;
        EXPECT_TRUE(torch::equal(model.b->bias, reference.b->bias)) << "round " << round;
        flat.free();
        EXPECT_EQ(flat.gatheredBytes(), 0);
        if (world == 1) {
          // The members are the shard: an in-place update of the shard is what the module sees.
          torch::NoGradGuard noGrad;
          const torch::Tensor saved = flat.shard().clone();
          flat.shard().add_(1.0);
          EXPECT_TRUE(torch::equal(model.b->bias, reference.b->bias + 1.0)) << "round " << round;
          flat.shard().copy_(saved);
        }
      }
    });
    for (const auto& e : errors) ASSERT_EQ(e, "") << "world " << world;
  }
}

// Reference gradients: the unsharded model on the whole batch.
std::vector<torch::Tensor> referenceGradients() {
  Mlp m;
  torch::Tensor x = globalInput();
  for (auto& l : m.layers()) x = torch::tanh(l->forward(x));
  x.pow(2).mean().backward();
  std::vector<torch::Tensor> g;
  for (auto& l : m.layers()) g.push_back(torch::cat({l->weight.grad().reshape({-1}), l->bias.grad()}));
  return g;
}

TEST(FlatParameterTest, FreedUnitsBackwardToTheUnshardedGradients) {
  const auto want = referenceGradients();
  for (int world : {1, 2, 3}) {
    std::mutex mu;
    const auto errors = testing::runThreadRanks(world, [&](distributed::Communicator& comm) {
      Mlp model;
      std::vector<std::unique_ptr<FlatParameter>> units;
      const char* names[] = {"a", "b", "c"};
      int i = 0;
      for (auto& l : model.layers()) {
        units.push_back(std::make_unique<FlatParameter>(membersOf(*l, names[i++]), comm.rank(), comm.size()));
      }
      // Each rank takes its rows of the global batch (6 rows: 6, 3 or 2 per rank).
      const int64_t rows = 6 / comm.size();
      torch::Tensor x = globalInput().narrow(0, comm.rank() * rows, rows);
      for (size_t u = 0; u < units.size(); ++u) {
        units[u]->gather(comm, "forward gather");
        x = torch::tanh(model.layers()[u]->forward(x));
        units[u]->free();
        // Before this unit's backward runs: gather it again.
        x.register_hook([&comm, unit = units[u].get()](torch::Tensor g) {
          unit->gather(comm, "backward gather");
          return g;
        });
      }
      x.pow(2).mean().backward();
      for (size_t u = units.size(); u-- > 0;) {
        units[u]->reduceGradients(comm, 1.0 / comm.size(), "reduce-scatter");
        units[u]->free();
      }
      std::lock_guard<std::mutex> lock(mu);
      for (size_t u = 0; u < units.size(); ++u) {
        const auto& f = *units[u];
        torch::Tensor padded = torch::cat({want[u], torch::zeros({f.padding()})});
        const torch::Tensor mine = padded.narrow(0, comm.rank() * f.shardNumel(), f.shardNumel());
        EXPECT_TRUE(torch::allclose(f.shard().grad(), mine, 1e-5, 1e-6))
            << "world " << comm.size() << " rank " << comm.rank() << " unit " << u << ": max diff "
            << (f.shard().grad() - mine).abs().max().item<double>();
        for (const auto& m : f.members()) EXPECT_FALSE(m.param.grad().defined()) << m.name;
      }
    });
    for (const auto& e : errors) ASSERT_EQ(e, "") << "world " << world;
  }
}

// NOTE [CPU offload]: an offloaded flat parameter never lets its members view the shard (a group of one
// is gathered through a copy too); with asyncCopies a reduced chunk waits in host memory, not in the
// shard's gradient, until landGradients() adds it, in the order the reductions finished; the values and
// gradients are those of a flat parameter kept in place, bit for bit, with and without casts around the
// collectives (gathered and reduced in bfloat16 from a float32 shard).
TEST(FlatParameterTest, OffloadedShardIsCopiedForEachGatherAndItsGradientLandsWhenAsked) {
  for (const FlatDtypes& dtypes : {FlatDtypes{}, FlatDtypes{torch::kBFloat16, torch::kBFloat16}}) {
    const auto inGather = dtypes.gather.value_or(torch::kFloat);
    for (int world : {1, 2}) {
      const std::string what = std::string(c10::toString(inGather)) + ", world " + std::to_string(world);
      std::mutex mu;
      const auto errors = testing::runThreadRanks(world, [&](distributed::Communicator& comm) {
        Mlp kept, offloaded;
        FlatParameter k(membersOf(*kept.layers()[0], "a"), comm.rank(), comm.size(), dtypes);
        FlatParameter f(membersOf(*offloaded.layers()[0], "a"), comm.rank(), comm.size(), dtypes, nullptr,
                        FlatPlacement{/*offload=*/true, /*asyncCopies=*/true});
        {
          std::lock_guard<std::mutex> lock(mu);
          EXPECT_TRUE(f.offloaded()) << what;
          EXPECT_FALSE(f.gathered()) << what << ": an offloaded shard is gathered through a copy";
          EXPECT_EQ(f.shardDevice(), c10::Device(c10::kCPU)) << what;
          EXPECT_EQ(f.shard().scalar_type(), torch::kFloat) << what;
          EXPECT_TRUE(torch::equal(f.shard(), k.shard())) << what;
        }
        const int64_t rows = 6 / comm.size();
        const torch::Tensor x = globalInput().narrow(0, comm.rank() * rows, rows).to(inGather);
        for (int pass = 0; pass < 2; ++pass) {  // two reductions accumulate, as two datasets do
          k.gather(comm, "gather kept");
          f.gather(comm, "gather offloaded");
          {
            std::lock_guard<std::mutex> lock(mu);
            EXPECT_NE(f.members().front().param.data_ptr(), f.shard().data_ptr()) << what;
            EXPECT_EQ(f.members().front().param.scalar_type(), inGather) << what;
            EXPECT_TRUE(torch::equal(f.members().front().param, k.members().front().param)) << what;
          }
          torch::tanh(kept.layers()[0]->forward(x * (pass + 1))).to(torch::kFloat).pow(2).mean().backward();
          torch::tanh(offloaded.layers()[0]->forward(x * (pass + 1)))
              .to(torch::kFloat)
              .pow(2)
              .mean()
              .backward();
          k.reduceGradients(comm, 0.5, "reduce kept");
          f.reduceGradients(comm, 0.5, "reduce offloaded");
          k.free();
          f.free();
          std::lock_guard<std::mutex> lock(mu);
          EXPECT_FALSE(f.shard().grad().defined()) << what << " pass " << pass << ": landed before asked";
          EXPECT_TRUE(f.reducing()) << what;
        }
        f.landGradients();
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_FALSE(f.reducing()) << what;
        ASSERT_TRUE(f.shard().grad().defined()) << what;
        EXPECT_EQ(f.shard().grad().device(), c10::Device(c10::kCPU)) << what;
        EXPECT_EQ(f.shard().grad().scalar_type(), torch::kFloat) << what;
        EXPECT_TRUE(torch::equal(f.shard().grad(), k.shard().grad())) << what;
      });
      for (const auto& e : errors) ASSERT_EQ(e, "") << what;
    }
  }
}

// NOTE [Mixed precision in a flat parameter], plain bf16: the store dtype puts the trainable shard (the
// master copy) and so its gradient in bfloat16 too; nothing is cast, so a group of one gathers nothing.
TEST(FlatParameterTest, StoreDtypeKeepsTheTrainableShardInIt) {
  const FlatDtypes bf16{torch::kBFloat16, torch::kBFloat16, torch::kBFloat16};
  for (int world : {1, 2}) {
    std::mutex mu;
    const auto errors = testing::runThreadRanks(world, [&](distributed::Communicator& comm) {
      Mlp model;
      Mlp reference;
      FlatParameter f(membersOf(*model.layers()[0], "a"), comm.rank(), comm.size(), bf16);
      const auto l = reference.layers()[0];
      const torch::Tensor all =
          torch::cat({l->weight.detach().reshape({-1}), l->bias.detach(), torch::zeros({f.padding()})})
              .to(torch::kBFloat16);
      {
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_EQ(f.shard().scalar_type(), torch::kBFloat16);
        EXPECT_EQ(f.shardBytes(), f.shardNumel() * 2);
        EXPECT_TRUE(torch::equal(f.shard(), all.narrow(0, comm.rank() * f.shardNumel(), f.shardNumel())));
        EXPECT_EQ(f.modelDtype(), torch::kFloat);  // what a checkpoint holds
        EXPECT_EQ(f.gathered(), world == 1);       // no cast: a group of one views its shard
      }
      const int64_t rows = 6 / comm.size();
      f.gather(comm, "forward gather");
      torch::Tensor x = globalInput().narrow(0, comm.rank() * rows, rows).to(torch::kBFloat16);
      torch::tanh(model.layers()[0]->forward(x)).to(torch::kFloat).pow(2).mean().backward();
      f.reduceGradients(comm, 1.0 / comm.size(), "reduce-scatter");
      f.free();
      std::lock_guard<std::mutex> lock(mu);
      ASSERT_TRUE(f.shard().grad().defined());
      EXPECT_EQ(f.shard().grad().scalar_type(), torch::kBFloat16);
      EXPECT_GT(f.shard().grad().abs().sum().item<double>(), 0.0);
    });
    for (const auto& e : errors) ASSERT_EQ(e, "") << "world " << world;
  }
}

// NOTE [Mixed precision in a flat parameter]: gathered in bfloat16, reduced in bfloat16, the trainable
// shard and its gradient in float32, a frozen flat parameter stored in bfloat16.
TEST(FlatParameterTest, MixedPrecisionGathersACastAndReducesIntoTheMasterShard) {
  const FlatDtypes bf16{torch::kBFloat16, torch::kBFloat16};
  Mlp unsharded;
  for (auto& p : unsharded.parameters()) p.set_data(p.detach().to(torch::kBFloat16));
  {
    torch::Tensor x = globalInput().to(torch::kBFloat16);
    for (auto& l : unsharded.layers()) x = torch::tanh(l->forward(x));
    x.to(torch::kFloat).pow(2).mean().backward();
  }
  for (int world : {1, 2, 3}) {
    std::mutex mu;
    const auto errors = testing::runThreadRanks(world, [&](distributed::Communicator& comm) {
      Mlp model;
      Mlp reference;
      for (auto& p : model.b->parameters()) p.set_requires_grad(false);
      std::vector<std::unique_ptr<FlatParameter>> units;
      const char* names[] = {"a", "b", "c"};
      int i = 0;
      for (auto& l : model.layers()) {
        units.push_back(
            std::make_unique<FlatParameter>(membersOf(*l, names[i++]), comm.rank(), comm.size(), bf16));
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        for (size_t u = 0; u < units.size(); ++u) {
          const auto& f = *units[u];
          const auto l = reference.layers()[u];
          const torch::Tensor all =
              torch::cat({l->weight.detach().reshape({-1}), l->bias.detach(), torch::zeros({f.padding()})});
          const torch::Tensor mine = all.narrow(0, comm.rank() * f.shardNumel(), f.shardNumel());
          const bool frozen = u == 1;
          EXPECT_EQ(f.shard().scalar_type(), frozen ? torch::kBFloat16 : torch::kFloat) << "unit " << u;
          EXPECT_EQ(f.shardBytes(), f.shardNumel() * (frozen ? 2 : 4)) << "unit " << u;
          EXPECT_TRUE(torch::equal(f.shard(), frozen ? mine.to(torch::kBFloat16) : mine)) << "unit " << u;
          EXPECT_EQ(f.modelDtype(), torch::kFloat);
          EXPECT_EQ(f.gatherDtype(), torch::kBFloat16);
          // A cast needs its own buffer even in a group of one: freed until gathered. A frozen flat parameter
          // is stored in the gather dtype: in a group of one the members view it.
          EXPECT_EQ(f.gathered(), frozen && world == 1) << "unit " << u;
        }
      }
      // The master values, gathered without touching the members.
      for (size_t u = 0; u < units.size(); ++u) {
        const torch::Tensor values = units[u]->gatherValues(comm, "test values");
        std::lock_guard<std::mutex> lock(mu);
        const auto l = reference.layers()[u];
        const torch::Tensor want = torch::cat({l->weight.detach().reshape({-1}), l->bias.detach()});
        EXPECT_TRUE(
            torch::equal(values.narrow(0, 0, want.numel()), u == 1 ? want.to(torch::kBFloat16) : want))
            << "unit " << u;
        EXPECT_EQ(units[u]->gatheredBytes(), 0) << "unit " << u;
      }
      const int64_t rows = 6 / comm.size();
      torch::Tensor x = globalInput().narrow(0, comm.rank() * rows, rows).to(torch::kBFloat16);
      for (size_t u = 0; u < units.size(); ++u) {
        units[u]->gather(comm, "forward gather");
        {
          std::lock_guard<std::mutex> lock(mu);
          EXPECT_EQ(units[u]->gatheredBytes(), u == 1 && world == 1 ? 0 : units[u]->paddedNumel() * 2)
              << "unit " << u;
          const auto l = reference.layers()[u];
          EXPECT_TRUE(torch::equal(model.layers()[u]->weight, l->weight.to(torch::kBFloat16)))
              << "unit " << u;
        }
        x = torch::tanh(model.layers()[u]->forward(x));
        units[u]->free();
        x.register_hook([&comm, unit = units[u].get()](torch::Tensor g) {
          unit->gather(comm, "backward gather");
          return g;
        });
      }
      x.to(torch::kFloat).pow(2).mean().backward();
      for (size_t u = units.size(); u-- > 0;) {
        if (units[u]->trainable()) units[u]->reduceGradients(comm, 1.0 / comm.size(), "reduce-scatter");
        units[u]->free();
      }
      std::lock_guard<std::mutex> lock(mu);
      for (size_t u : {size_t{0}, size_t{2}}) {
        const auto& f = *units[u];
        const auto l = unsharded.layers()[u];
        const torch::Tensor want = torch::cat({l->weight.grad().reshape({-1}), l->bias.grad(),
                                               torch::zeros({f.padding()}, torch::kBFloat16)})
                                       .to(torch::kFloat)
                                       .narrow(0, comm.rank() * f.shardNumel(), f.shardNumel());
        const torch::Tensor got = f.shard().grad();
        ASSERT_EQ(got.scalar_type(), torch::kFloat) << "unit " << u;
        // bfloat16 rounding of per-rank gradients and of their sum: a few units in the last place.
        const double scale = want.abs().max().item<double>();
        EXPECT_TRUE(torch::allclose(got, want, 3e-2, 3e-2 * scale))
            << "world " << comm.size() << " unit " << u << ": max diff "
            << (got - want).abs().max().item<double>();
        for (const auto& m : f.members()) EXPECT_FALSE(m.param.grad().defined()) << m.name;
      }
      for (const auto& m : units[1]->members()) EXPECT_FALSE(m.param.grad().defined()) << m.name;
    });
    for (const auto& e : errors) ASSERT_EQ(e, "") << "world " << world;
  }
}

// Delayed init: only rank 0's members hold values; every rank's shard is rank 0's chunk, and the other
// ranks' members are never read (NaN there would show).
TEST(FlatParameterTest, ValuesComeFromRankZeroAlone) {
  for (int world : {2, 3}) {
    std::mutex mu;
    const auto errors = testing::runThreadRanks(world, [&](distributed::Communicator& comm) {
      Mlp model;
      Mlp reference;
      if (comm.rank() != 0) {
        torch::NoGradGuard noGrad;
        for (auto& p : model.parameters()) p.fill_(std::numeric_limits<float>::quiet_NaN());
      }
      FlatParameter flat(membersOf(*model.b, "b"), comm.rank(), comm.size(), {}, &comm);
      flat.gather(comm, "test gather");
      std::lock_guard<std::mutex> lock(mu);
      const torch::Tensor all = torch::cat({reference.b->weight.detach().reshape({-1}),
                                            reference.b->bias.detach(), torch::zeros({flat.padding()})});
      EXPECT_TRUE(
          torch::equal(flat.shard(), all.narrow(0, comm.rank() * flat.shardNumel(), flat.shardNumel())))
          << "world " << world << " rank " << comm.rank();
      EXPECT_TRUE(torch::equal(model.b->weight, reference.b->weight))
          << "world " << world << " rank " << comm.rank();
    });
    for (const auto& e : errors) ASSERT_EQ(e, "") << "world " << world;
  }
}

// A flat parameter of several broadcast chunks (kInitChunkBytes), shards not aligned with them: each
// receiving rank keeps exactly its shard of rank 0's values; members and padding as in a plain build.
TEST(FlatParameterTest, ValuesFromRankZeroArriveInChunks) {
  const int64_t in = 1031, out = FlatParameter::kInitChunkBytes / 4 / in * 2 + 7;  // a bit over 2 chunks
  torch::nn::Linear reference(in, out);
  const int world = 3;
  std::mutex mu;
  const auto errors = testing::runThreadRanks(world, [&](distributed::Communicator& comm) {
    torch::nn::Linear layer(in, out);
    {
      torch::NoGradGuard noGrad;
      for (auto& p : layer->parameters())
        p.fill_(comm.rank() == 0 ? 0.0 : std::numeric_limits<float>::quiet_NaN());
      if (comm.rank() == 0) {
        layer->weight.copy_(reference->weight);
        layer->bias.copy_(reference->bias);
      }
    }
    FlatParameter flat(membersOf(*layer, "big"), comm.rank(), comm.size(), {}, &comm);
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_GT(flat.paddedNumel() * 4, 2 * FlatParameter::kInitChunkBytes);
    const torch::Tensor all = torch::cat(
        {reference->weight.detach().reshape({-1}), reference->bias.detach(), torch::zeros({flat.padding()})});
    EXPECT_TRUE(torch::equal(flat.shard(), all.narrow(0, comm.rank() * flat.shardNumel(), flat.shardNumel())))
        << "rank " << comm.rank();
    EXPECT_FALSE(flat.gathered()) << "left freed";
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
}

TEST(FlatParameterTest, MixedRequiresGradIsRefusedByName) {
  Mlp model;
  model.a->bias.set_requires_grad(false);
  try {
    FlatParameter flat(membersOf(*model.a, "a"), 0, 1);
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a.bias differs in requires_grad from a.weight"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fs::fsdp
