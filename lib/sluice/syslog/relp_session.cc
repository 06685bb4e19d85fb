// relp_session: librelp's server rules for one session (open first, each
// transaction number one past the last, only the commands offered).
#include "sluice/syslog/relp_session.h"

namespace sluice {

namespace {

constexpr std::uint32_t max_txnr = 999'999'999;

std::uint32_t after(std::uint32_t txnr) noexcept { return txnr == max_txnr ? 1 : txnr + 1; }

}  // namespace

bool relp_session::check(const relp_frame& f, std::string& out) {
  if (closed_ || close_txnr_ != 0) {
    error_ = "RELP: a frame after close";
    return false;
  }
  if (!open_) {
    if (f.command != "open") {
      error_ = "RELP: the session did not start with open (got '" + f.command + "')";
      return false;
    }
    if (f.txnr == 0) {
      error_ = "RELP: transaction number 0";
      return false;
    }
    open_ = true;
    last_txnr_ = f.txnr;
    next_ack_ = after(f.txnr);
    // The offers librelp's client looks for: the protocol version and the
    // syslog command (it refuses a server without it).
    append_relp_frame(out, f.txnr, "rsp", "200 OK\nrelp_version=0\nrelp_software=sluice\ncommands=syslog");
    return false;
  }
  if (f.txnr != after(last_txnr_)) {
    error_ = "RELP: transaction number " + std::to_string(f.txnr) + " where " + std::to_string(after(last_txnr_)) +
             " was due";
    return false;
  }
  last_txnr_ = f.txnr;
  if (f.command == "syslog") {
    ++unanswered_;
    return true;
  }
  if (f.command == "close") {
    close_txnr_ = f.txnr;
    return false;
  }
  if (f.command == "open") {
    error_ = "RELP: a second open";
    return false;
  }
  error_ = "RELP: command '" + f.command + "' was not offered (only syslog)";
  return false;
}

void relp_session::ack_next(std::string& out) {
  if (unanswered_ == 0) return;
  --unanswered_;
  append_relp_frame(out, next_ack_, "rsp", "200 OK");
  next_ack_ = after(next_ack_);
}

void relp_session::refuse_next(std::string& out, std::string_view text) {
  if (unanswered_ == 0) return;
  --unanswered_;
  std::string body = "500 ";
  body += text;
  append_relp_frame(out, next_ack_, "rsp", body);
  next_ack_ = after(next_ack_);
}

void relp_session::answer_close(std::string& out) {
  closed_ = true;
  append_relp_frame(out, close_txnr_, "rsp", "200 OK");
}

void relp_session::append_serverclose(std::string& out) { append_relp_frame(out, 0, "serverclose", {}); }

}  // namespace sluice
