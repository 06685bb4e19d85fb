// sluice-logd's receiving end: one event loop's listeners, connections and
// output (FILE's writable on its worker, or a relay's next hop), and with
// --threads the N-1 loops beside the main one (logd/other_loop.h). main()
// (sluice_logd.cc) parses the options and runs it.
#pragma once

#include "logd/logd_options.h"

namespace sluice_tools {

// Runs sluice-logd as `o` says, until SIGTERM or SIGINT (or a failure);
// the exit status.
int run_logd(const logd_options& o);

}  // namespace sluice_tools
