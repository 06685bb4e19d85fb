// relp_frames: RELP's frames (librelp's protocol), read incrementally from
// any chunking of the bytes and written: "TXNR SP COMMAND SP DATALEN [SP
// DATA] LF", TXNR 1 to 999999999, COMMAND 1 to 32 letters (open, syslog,
// close, rsp, serverclose, ...), DATALEN the bytes of DATA in decimal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice {

/// One RELP frame, as read or to be written.
struct relp_frame {
  std::uint32_t txnr = 0;
  std::string command;
  std::string data;
};

/// Reads RELP frames from a byte stream however it is cut. feed() takes the
/// next bytes and calls `on_frame(const relp_frame&)` for each whole frame;
/// it returns false at the first malformed frame, error() saying why (the
/// reader then takes nothing more: a RELP peer closes the session).
class relp_frame_reader {
 public:
  /// The largest DATALEN accepted (librelp's default maximum is 128 KiB).
  explicit relp_frame_reader(std::size_t max_data = 128 * 1024) : max_data_(max_data) {}

  template <class F>
  bool feed(std::string_view bytes, F&& on_frame) {
    while (!bytes.empty()) {
      if (!error_.empty()) return false;
      const std::size_t used = step(bytes);
      bytes.remove_prefix(used);
      if (!error_.empty()) return false;
      if (complete_) {
        complete_ = false;
        on_frame(static_cast<const relp_frame&>(frame_));
        reset();
      }
    }
    return error_.empty();
  }
  /// Why the stream is bad; empty while it is good.
  const std::string& error() const noexcept { return error_; }
  /// Whether a frame is partly read (a session that ends now ends torn).
  bool mid_frame() const noexcept { return state_ != state::txnr || digits_ != 0; }

  static constexpr std::size_t max_txnr_digits = 9;
  static constexpr std::size_t max_command = 32;
  static constexpr std::size_t max_datalen_digits = 9;

 private:
  enum class state { txnr, command, datalen, data, trailer };
  std::size_t step(std::string_view bytes);
  std::size_t scan(std::string_view bytes);
  void reset() noexcept;
  void fail(std::string why);

  std::size_t max_data_;
  state state_ = state::txnr;
  std::size_t digits_ = 0;
  std::uint64_t number_ = 0;
  relp_frame frame_;
  bool complete_ = false;
  std::string error_;
};

/// Appends one frame: "TXNR SP COMMAND SP DATALEN [SP DATA] LF".
void append_relp_frame(std::string& out, std::uint32_t txnr, std::string_view command, std::string_view data);

/// The code at the start of a rsp frame's data ("200 OK" -> 200), 0 if it
/// has none.
int relp_rsp_code(std::string_view data) noexcept;

}  // namespace sluice
