// sluice-log-tls.so: see log_tls.h.
#include "log_tls.h"

#include <chrono>

#include "sluice/base/errors.h"
#include "sluice/syslog/syslog_tls.h"

namespace {
template <class Options>
bool use_tls(Options* o, const sluice_log_tls_files* files, std::string* why) {
  sluice::tls::socket_options t;
  t.context.ca_file = files->ca;
  t.context.cert_file = files->cert;
  t.context.key_file = files->key;
  t.servername = files->name;
  t.reject_unauthorized = true;
  // A receiver that accepts TCP and says nothing does not hold a
  // connection forever.
  t.handshake_timeout = std::chrono::seconds(30);
  try {
    sluice::tls::use_tls(*o, t);
  } catch (const sluice::stream_error& e) {
    *why = e.what();
    return false;
  }
  return true;
}
}  // namespace

extern "C" bool sluice_log_use_tls(sluice::syslog_options* o, const sluice_log_tls_files* files, std::string* why) {
  return use_tls(o, files, why);
}
extern "C" bool sluice_log_use_tls_relp(sluice::relp_options* o, const sluice_log_tls_files* files, std::string* why) {
  return use_tls(o, files, why);
}
