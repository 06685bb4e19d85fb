#include "sluice/zlib/zlib_error.h"

#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "sluice/base/errors.h"

namespace sluice {
namespace {

struct zlib_entry {
  std::string code;
  int errno_value;
  std::string message;
};

// A deque keeps the entries at fixed addresses while others are added, and
// value 0 is never an error.
class zlib_category_impl final : public coded_error_category {
 public:
  const char* name() const noexcept override { return "sluice.zlib"; }
  std::string message(int value) const override { return get(value).message; }
  std::string code(int value) const override { return get(value).code; }
  int errno_of(int value) const { return get(value).errno_value; }

  int intern(std::string_view code, int errno_value, std::string_view message) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 1; i < entries_.size(); ++i) {
      const zlib_entry& e = entries_[i];
      if (e.code == code && e.errno_value == errno_value && e.message == message) return static_cast<int>(i);
    }
    entries_.push_back({std::string(code), errno_value, std::string(message)});
    return static_cast<int>(entries_.size() - 1);
  }

 private:
  zlib_entry get(int value) const {
    std::lock_guard lock(mutex_);
    if (value <= 0 || static_cast<std::size_t>(value) >= entries_.size()) return {"Z_UNKNOWN", 0, "unknown zlib error"};
    return entries_[static_cast<std::size_t>(value)];
  }

  mutable std::mutex mutex_;
  std::deque<zlib_entry> entries_{zlib_entry{"Z_OK", 0, "success"}};
};

zlib_category_impl& category_impl() {
  static zlib_category_impl category;
  return category;
}

}  // namespace

const std::error_category& zlib_category() noexcept { return category_impl(); }

std::error_code make_zlib_error(std::string_view code, int errno_value, std::string_view message) {
  return {category_impl().intern(code, errno_value, message), category_impl()};
}

int zlib_errno(const std::error_code& ec) {
  return ec.category() == zlib_category() ? category_impl().errno_of(ec.value()) : 0;
}

namespace {
// std::system_error's what() appends the code's message, and the message of
// errc::out_of_range is the one of read(n)'s size ('The value of "size"
// ... <= 1GiB'): the option's own message must stand alone, as Node's does.
class option_range_error final : public stream_error {
 public:
  explicit option_range_error(std::string message)
      : stream_error(make_error_code(errc::out_of_range)), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};
}  // namespace

void detail::throw_option_out_of_range(std::string_view option, long long got, long long min,
                                       std::optional<long long> max) {
  std::string m = "The value of \"options.";
  m += option;
  m += "\" is out of range. It must be >= " + std::to_string(min);
  if (max) m += " and <= " + std::to_string(*max);
  m += ". Received " + std::to_string(got);
  throw option_range_error(std::move(m));
}

}  // namespace sluice
