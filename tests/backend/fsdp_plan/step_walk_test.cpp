// NOTE [Step walk]: the peak is the largest moment, not the sum of each term's largest.
#include "backend/fsdp_plan/step_walk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace fs::fsdp_plan {
namespace {

// A frozen tower gathered first (no activations yet), then a layer that keeps activations.
WalkModel towerThenLayer() {
  WalkModel m;
  m.root = 10;
  m.forwardWindow = m.backwardWindow = 1;
  WalkUnit tower;
  tower.gathered = 1000;
  tower.inBackward = false;
  tower.working = 50;
  WalkUnit layer;
  layer.gathered = 100;
  layer.gradient = 100;
  layer.kept = 500;
  m.units = {tower, layer};
  m.headForward = 300;
  m.headBackward = 200;
  return m;
}

TEST(StepWalkTest, TowerWindowIsNotAddedToTheActivationsKeptLater) {
  // root + tower + its working set: 1060; end of forward: root + 500 kept + 300 head = 810.
  EXPECT_EQ(walkPeak(towerThenLayer()), 1060);
}

TEST(StepWalkTest, EndOfForwardWhenActivationsDominate) {
  auto m = towerThenLayer();
  m.units[1].kept = 2000;
  EXPECT_EQ(walkPeak(m), 10 + 2000 + 300);
}

TEST(StepWalkTest, ReductionInFlightBesideTheNextUnitsBackward) {
  auto m = towerThenLayer();
  m.units[0] = m.units[1];  // two layers, both in backward
  m.units[0].kept = m.units[1].kept = 0;
  m.headForward = m.headBackward = 0;
  // The second unit's backward: root + 100 gathered + 100 gradient; the first's: + 2 x 100 in flight
  // (the flat gradient and Gloo's receive buffer).
  EXPECT_EQ(walkPeak(m), 10 + 100 + 100 + 200);
  m.units[0].staged = m.units[1].staged = true;  // Gloo stages the latest gather's full size
  EXPECT_EQ(walkPeak(m), 10 + 100 + 100 + 200 + 100);
  m.units[0].staged = m.units[1].staged = false;  // shared memory: no staging, no receive buffer
  m.units[0].reduceCopies = m.units[1].reduceCopies = 1;
  EXPECT_EQ(walkPeak(m), 10 + 100 + 100 + 100);
}

TEST(StepWalkTest, HeldUnitsStayGatheredUntilTheirBackward) {
  auto m = towerThenLayer();
  m.units[0].gathered = 0;
  m.units[0].working = 0;
  m.units[1].held = true;
  m.units[1].kept = 0;
  m.headForward = 0;
  m.headBackward = 400;
  // Start of backward: root + the held layer + the head's gradients.
  EXPECT_EQ(walkPeak(m), 10 + 100 + 400);
}

// A root of 10 and one layer (100 gathered, 100 gradient, 1000 kept) beside a head unit; the head's
// figures outside and inside its unit.
WalkModel layerAndHead(const WalkUnit& headUnit, bool headFirst, int64_t inUnitForward,
                       int64_t inUnitBackward) {
  WalkModel m;
  m.root = 10;
  WalkUnit layer;
  layer.gathered = 100;
  layer.gradient = 100;
  layer.kept = 1000;
  m.units = headFirst ? std::vector<WalkUnit>{headUnit, layer} : std::vector<WalkUnit>{layer, headUnit};
  m.headForward = 300;
  m.headBackward = 350;
  m.headInUnitForward = inUnitForward;
  m.headInUnitBackward = inUnitBackward;
  return m;
}

// A tied head's unit (the input embedding's) is gathered again only around the head's product; the
// loss's logits and log-softmax come after its release, and its gradient exists from the head's backward.
TEST(StepWalkTest, TiedHeadGatheredOnlyInsideTheHead) {
  WalkUnit embedding;
  embedding.gathered = 40;
  embedding.gradient = 40;
  embedding.tied = true;
  auto m = layerAndHead(embedding, true, 200, 100);
  // Start of backward outside every unit: root + kept + the loss's gradients; the embedding is neither
  // gathered nor holding its gradient yet (the walk before said 10 + 40 + 40 + 1000 + 350).
  EXPECT_EQ(walkPeak(m), 10 + 1000 + 350);
  // The head's product inside the gathered embedding.
  m.headInUnitForward = 400;
  EXPECT_EQ(walkPeak(m), 10 + 40 + 1000 + 400);
  // The head's backward: the embedding gathered with its unsharded gradient beside the logits gradient.
  m.headInUnitBackward = 420;
  EXPECT_EQ(walkPeak(m), 10 + 40 + 40 + 1000 + 420);
}

// An untied head is a unit of its own (estimateRankMemory gives it the head's figures as its working
// sets): its product is its forward's working set, its backward's gradients beside its gathered weight.
TEST(StepWalkTest, UntiedHeadWorksInsideItsUnit) {
  WalkUnit head;
  head.gathered = 500;
  head.inBackward = false;  // frozen
  head.working = 250;
  auto m = layerAndHead(head, false, 250, 100);
  EXPECT_EQ(walkPeak(m), 10 + 500 + 1000 + 250);
  m.units[1].inBackward = true;  // trainable: gathered again in backward with its gradient
  m.units[1].gradient = 500;
  m.units[1].backwardWorking = 240;
  EXPECT_EQ(walkPeak(m), 10 + 500 + 500 + 1000 + 240);
}

TEST(StepWalkTest, MomentsNameTheUnitAndPhaseAndTheirLargestIsThePeak) {
  const auto m = towerThenLayer();
  const auto moments = walkMoments(m);
  // Two forward units, four head moments, one backward unit (the tower runs under no-grad).
  ASSERT_EQ(moments.size(), 7u);
  EXPECT_EQ(moments[0].phase, WalkPhase::kForward);
  EXPECT_EQ(moments[0].unit, 0);
  EXPECT_EQ(moments[0].bytes, 1060);
  EXPECT_EQ(moments[2].unit, -1);
  EXPECT_EQ(moments[6].phase, WalkPhase::kBackward);
  EXPECT_EQ(moments[6].unit, 1);
  int64_t largest = 0;
  for (const auto& x : moments) largest = std::max(largest, x.bytes);
  EXPECT_EQ(largest, walkPeak(m));
  EXPECT_STREQ(walkPhaseName(WalkPhase::kHeadBackward), "head_backward");
}

}  // namespace
}  // namespace fs::fsdp_plan
