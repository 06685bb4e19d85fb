// crash_handler: logger_options::crash_handler. On SIGSEGV, SIGABRT, SIGBUS,
// SIGILL or SIGFPE, what the rings of each logger that asked for it hold is
// written with write(2) and async-signal-safe formatting, then the signal
// takes its default action. Internal to the logger (never installed).
#pragma once

#include "sluice/logger/detail/state.h"

namespace sluice::detail {

/// The logger whose state is `s` is written at a crash from now on (at most
/// 16 loggers at once: more are not). Installs the handlers, once per
/// process.
void add_crash_logger(logger::state& s);
/// Before `s` goes: a crash no longer touches it.
void remove_crash_logger(logger::state& s) noexcept;

}  // namespace sluice::detail
