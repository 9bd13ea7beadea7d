// A loopback TCP port nobody listens on now: the master port of a run whose
// ranks all run on this machine (the app's local launch, `flamingo-train demo`).
// Another process may take it before the run binds it; the run then fails
// naming the port, as torchrun's own free-port pick would.
//
// Thread-safety: a plain function.
#pragma once

namespace fs::launch {

// 29500 (torchrun's default) when the system gives no port.
int freeLoopbackPort();

}  // namespace fs::launch
