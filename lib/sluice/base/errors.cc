#include "sluice/base/errors.h"

#include <cstring>
#include <deque>
#include <mutex>

namespace sluice {
namespace {

struct entry {
  std::string_view code;
  std::string_view message;
};

constexpr entry table[] = {
    {"OK", "success"},
#define SLUICE_X(name, code, message) {code, message},
    SLUICE_STREAM_ERRORS(SLUICE_X)
#undef SLUICE_X
};

const entry* find(int value) noexcept {
  if (value < 0 || value >= static_cast<int>(std::size(table))) return nullptr;
  return &table[value];
}

class stream_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "sluice.stream"; }
  std::string message(int value) const override {
    const entry* e = find(value);
    return e ? std::string(e->message) : "unknown sluice stream error";
  }
};

// Interned messages of user_error(); a deque keeps them at fixed addresses.
class user_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "sluice.user"; }
  std::string message(int value) const override {
    std::lock_guard lock(mutex_);
    if (value < 0 || static_cast<std::size_t>(value) >= messages_.size()) return "unknown user error";
    return messages_[static_cast<std::size_t>(value)];
  }
  int intern(std::string_view message) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 1; i < messages_.size(); ++i)
      if (messages_[i] == message) return static_cast<int>(i);
    messages_.emplace_back(message);
    return static_cast<int>(messages_.size() - 1);
  }

 private:
  mutable std::mutex mutex_;
  std::deque<std::string> messages_{std::string("success")};  // value 0 is never an error
};

user_category_impl& user_category() {
  static user_category_impl category;
  return category;
}

}  // namespace

std::error_code user_error(std::string_view message) {
  return {user_category().intern(message), user_category()};
}

const std::error_category& stream_category() noexcept {
  static const stream_category_impl category;
  return category;
}

std::string code_name(const std::error_code& ec) {
  if (ec.category() == stream_category()) {
    if (const entry* e = find(ec.value())) return std::string(e->code);
  } else if (ec.category() == std::system_category() || ec.category() == std::generic_category()) {
    // strerrorname_np is glibc 2.32+; Debian 12 has 2.36.
    if (const char* n = strerrorname_np(ec.value())) return n;
  } else if (const auto* coded = dynamic_cast<const coded_error_category*>(&ec.category())) {
    return coded->code(ec.value());
  }
  return ec.message();
}

}  // namespace sluice
