// The planner's peak of one training step, walked moment by moment rather
// than summing each term's own largest (they do not coincide).
//
// NOTE [Step walk] (bytes per rank on top of model state and the batches):
// a micro-batch's forward visits the units in gather order; at unit i the
// rank holds the root, the activations kept so far, unit i's own
// activations and working set, and the window of units gathered at once
// (i and its prefetch). The head's unit (a tied head's gathered again) holds
// the product and its scatter; once it is released, everything kept plus
// the head's logits and log-softmax. At the start of backward, outside
// every unit: the loss and logits gradients instead of the logits, and the
// root's unsharded gradient; then the head's unit gathered again with its
// unsharded gradient, the logits gradient and its real rows. Then the units that take
// part in backward, in reverse: at unit a the activations of a and of every
// unit before it are still kept (a's are freed when its backward ends), a
// checkpointed unit is recomputed, its backward's own gradients are alive
// (the attention gradients and the residual stream's), the backward window is gathered beside
// a's unsharded gradient, and the previous unit's reduction is in flight:
// its flat gradient plus the reduce-scatter's receive buffer of the same
// size (our communicator's all-to-all, NOTE [Collectives on Debian's
// LibTorch 1.13]), one unit at a time. Under Gloo every gather also stages
// the unit's full size (Gloo's list all-gather gathers into one flat
// tensor and copies out), for the latest gather of the window.
// shard_grad_op's held units stay gathered from their forward to their
// backward. Activations outside every unit (a policy that leaves a region
// in the root) count as kept from the start.
// The step's peak is the largest moment over the datasets' micro-batches
// (they run one after the other).
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

namespace fs::fsdp_plan {

struct WalkUnit {
  int64_t gathered = 0;  // bytes while gathered
  int64_t gradient = 0;  // its unsharded gradient in backward
  bool inBackward = true;
  bool held = false;      // shard_grad_op: gathered from its forward to its backward
  bool tied = false;      // holds a tied head: gathered again at the head
  int64_t kept = 0;       // activations its forward keeps until its backward
  int64_t working = 0;    // transient of its forward (the vision tower's block; an untied head's logits)
  int64_t recompute = 0;  // its forward run again in backward (checkpointing)
  int64_t backwardWorking = 0;  // gradients alive inside its backward (ActivationRegions::*Backward)
  bool staged = false;          // its all-gather goes through Gloo's list form, which stages a flat copy
  // Its reduce-scatter in flight: the flat gradient, plus Gloo's receive buffer (0 when the transport copied
  // the gradient as it was issued).
  int64_t reduceCopies = 2;
};

struct WalkModel {
  std::vector<WalkUnit> units;  // non-root, gather order
  int64_t root = 0, rootGradient = 0;
  int64_t forwardWindow = 1, backwardWindow = 1;
  int64_t rootKept = 0;  // activations in no unit, kept from the start
  int64_t bias = 0, headForward = 0, headBackward = 0;
  // ActivationRegions' same, for a tied head: its unit (the embedding's) is gathered again around them.
  int64_t headInUnitForward = 0, headInUnitBackward = 0;
};

// One moment of the walk: the unit being run (an index into WalkModel::units;
// -1 at the head, outside every unit) and the gathered + activation bytes then.
enum class WalkPhase { kForward, kHeadForward, kHeadBackward, kBackward };
struct WalkMoment {
  WalkPhase phase = WalkPhase::kForward;
  int unit = -1;
  int64_t bytes = 0;
};
// "forward", "head_forward", "head_backward", "backward" (the plan JSON's spelling).
const char* walkPhaseName(WalkPhase phase);

// Every moment of the micro-batch, in walk order: each unit's forward, the
// head's four moments (its unit gathered again for the product, after its
// release, the loss' gradients, the unit gathered again with its gradient),
// then each backward unit in reverse.
std::vector<WalkMoment> walkMoments(const WalkModel& m);

// The largest gathered + activation bytes at any moment of the micro-batch.
int64_t walkPeak(const WalkModel& m);

}  // namespace fs::fsdp_plan
