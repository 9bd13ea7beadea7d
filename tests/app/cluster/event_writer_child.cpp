// A stand-in for rank 0's telemetry writer in the disconnect test: appends a
// run_started event, then a step event (with the engine's encoder) every
// `interval_ms` until <run_dir>/stop exists, then run_finished; each line with one
// write() as the engine's writer does. Usage: event_writer_child RUN_DIR INTERVAL_MS
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_dir.h"

int main(int argc, char** argv) {
  namespace proto = fs::protocol;
  if (argc != 3) {
    std::fprintf(stderr, "usage: event_writer_child RUN_DIR INTERVAL_MS\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int interval = std::atoi(argv[2]);
  const int fd = ::open((dir + "/events.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return 1;
  std::uint64_t seq = 0;
  auto emit = [&](proto::EventBody body) {
    proto::Event e;
    e.seq = seq++;
    e.t = std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::system_clock::now().time_since_epoch())
              .count();
    e.body = std::move(body);
    const std::string line = proto::encodeEventLine(e);
    return ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  };
  proto::RunStartedEvent started;
  started.run_id = "disconnects";
  started.world_size = 1;
  started.nnodes = 1;
  started.datasets = {"laion"};
  if (!emit(started)) return 1;
  for (std::int64_t step = 1; ::access((dir + "/stop").c_str(), F_OK) != 0; ++step) {
    proto::StepEvent s;
    s.step = step;
    s.loss["laion"] = 1.0 / static_cast<double>(step);
    s.lr = 1e-4;
    if (!emit(s)) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(interval));
  }
  proto::RunFinishedEvent finished;
  finished.steps = static_cast<std::int64_t>(seq) - 1;
  if (!emit(finished)) return 1;
  ::close(fd);
  return 0;
}
