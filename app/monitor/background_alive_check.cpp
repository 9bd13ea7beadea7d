#include "app/monitor/background_alive_check.h"

#include <QThreadPool>
#include <memory>
#include <mutex>

namespace fs::app {
namespace {

struct BackgroundState {
  explicit BackgroundState(AliveCheck check) : blocking(std::move(check)) {}
  const AliveCheck blocking;
  std::mutex mutex;
  bool probing = false;                  // a probe is in flight
  std::optional<std::int64_t> last_pid;  // the pid the last finished probe was about
  std::optional<bool> last;              // its answer
};

}  // namespace

AliveCheck aliveCheckInBackground(AliveCheck blocking) {
  auto state = std::make_shared<BackgroundState>(std::move(blocking));
  return [state](const protocol::RunManifest& manifest) -> std::optional<bool> {
    std::lock_guard lock(state->mutex);
    if (!state->probing) {
      state->probing = true;
      QThreadPool::globalInstance()->start([state, manifest] {
        const std::optional<bool> answer = state->blocking(manifest);
        std::lock_guard done(state->mutex);
        state->last_pid = manifest.pid;
        state->last = answer;
        state->probing = false;
      });
    }
    if (state->last_pid != manifest.pid) return std::nullopt;
    return state->last;
  };
}

}  // namespace fs::app
