// The TLS part of sluice-log, a module (sluice-log-tls.so) that sluice-log
// loads with dlopen() only for a syslog+tls:// or relp+tls:// DEST: a run that writes a
// file or sends in plaintext does not map libssl and libcrypto (several MB
// of address space: `ulimit -v` runs of a few MB must still start).
#pragma once

#include <string>

#include "sluice/syslog/relp_writable.h"
#include "sluice/syslog/syslog_writable.h"

// What sluice-log's --tls-* options say; empty: not given.
struct sluice_log_tls_files {
  std::string ca, cert, key, name;
};

// The module's one entry point, unmangled so that dlsym() finds it: makes
// every connection of a syslog_writable made with `o` a TLS client verified
// by `files` (tls::use_tls()); false, with OpenSSL's reason in `why`, for a
// file it cannot load.
extern "C" bool sluice_log_use_tls(sluice::syslog_options* o, const sluice_log_tls_files* files, std::string* why);
using sluice_log_use_tls_fn = decltype(&sluice_log_use_tls);
// The same for relp+tls://.
extern "C" bool sluice_log_use_tls_relp(sluice::relp_options* o, const sluice_log_tls_files* files, std::string* why);
using sluice_log_use_tls_relp_fn = decltype(&sluice_log_use_tls_relp);
