// errors: the stream error table, code_name(), user_error() and the categories.
#include "support/printers.h"

#include <cerrno>
#include <string>
#include <system_error>

#include "sluice/base/errors.h"

using sluice::code_name;
using sluice::errc;
using sluice::make_error_code;

TEST_CASE("code_name gives Node's ERR_* code for every stream error") {
  CHECK(code_name(make_error_code(errc::write_after_end)) == "ERR_STREAM_WRITE_AFTER_END");
  CHECK(code_name(make_error_code(errc::destroyed)) == "ERR_STREAM_DESTROYED");
  CHECK(code_name(make_error_code(errc::already_finished)) == "ERR_STREAM_ALREADY_FINISHED");
  CHECK(code_name(make_error_code(errc::multiple_callback)) == "ERR_MULTIPLE_CALLBACK");
  CHECK(code_name(make_error_code(errc::null_values)) == "ERR_STREAM_NULL_VALUES");
  CHECK(code_name(make_error_code(errc::invalid_high_water_mark)) == "ERR_INVALID_ARG_VALUE");
  CHECK(code_name(make_error_code(errc::push_after_eof)) == "ERR_STREAM_PUSH_AFTER_EOF");
  CHECK(code_name(make_error_code(errc::unshift_after_end)) == "ERR_STREAM_UNSHIFT_AFTER_END_EVENT");
  CHECK(code_name(make_error_code(errc::premature_close)) == "ERR_STREAM_PREMATURE_CLOSE");
  CHECK(code_name(make_error_code(errc::cannot_pipe)) == "ERR_STREAM_CANNOT_PIPE");
  CHECK(code_name(make_error_code(errc::method_not_implemented)) == "ERR_METHOD_NOT_IMPLEMENTED");
  CHECK(code_name(make_error_code(errc::line_too_long)) == "ERR_SLUICE_LINE_TOO_LONG");
}

TEST_CASE("every stream error carries Node's message") {
  CHECK(make_error_code(errc::write_after_end).message() == "write after end");
  CHECK(make_error_code(errc::destroyed).message() == "Cannot call write after a stream was destroyed");
  CHECK(make_error_code(errc::already_finished).message() == "Cannot call end after a stream was finished");
  CHECK(make_error_code(errc::multiple_callback).message() == "Callback called multiple times");
  CHECK(make_error_code(errc::null_values).message() == "May not write null values to stream");
  CHECK(make_error_code(errc::push_after_eof).message() == "stream.push() after EOF");
  CHECK(make_error_code(errc::premature_close).message() == "Premature close");
  CHECK(make_error_code(errc::method_not_implemented).message() == "The method is not implemented");
}

TEST_CASE("stream errors are true error codes of stream_category, named sluice.stream") {
  const std::error_code ec = errc::destroyed;  // implicit: errc is an error code enum
  CHECK(bool(ec));
  CHECK(ec.category() == sluice::stream_category());
  CHECK(std::string(sluice::stream_category().name()) == "sluice.stream");
  CHECK(ec == errc::destroyed);
  CHECK(ec != errc::write_after_end);
  CHECK(ec != std::error_code(ec.value(), std::generic_category()));
}

TEST_CASE("an unknown stream error value still has a message and a name") {
  const std::error_code ec(9999, sluice::stream_category());
  CHECK_FALSE(ec.message().empty());
  CHECK_FALSE(code_name(ec).empty());
}

TEST_CASE("code_name gives the errno name for system errors") {
  CHECK(code_name(std::error_code(EPIPE, std::system_category())) == "EPIPE");
  CHECK(code_name(std::error_code(ENOSPC, std::system_category())) == "ENOSPC");
  CHECK(code_name(std::error_code(EAGAIN, std::system_category())) == "EAGAIN");
  CHECK(code_name(std::make_error_code(std::errc::broken_pipe)) == "EPIPE");  // generic_category
  CHECK(code_name(std::error_code(ENOENT, std::generic_category())) == "ENOENT");
}

TEST_CASE("user_error keeps its message, and equal messages give equal codes") {
  const std::error_code a = sluice::user_error("disk on fire");
  const std::error_code b = sluice::user_error("disk on fire");
  const std::error_code c = sluice::user_error("disk under water");
  CHECK(bool(a));
  CHECK(a.message() == "disk on fire");
  CHECK(code_name(a) == "disk on fire");
  CHECK(a == b);
  CHECK(a != c);
  CHECK(c.message() == "disk under water");
  CHECK(a.category() == c.category());
  CHECK(a.category() != sluice::stream_category());
  CHECK(a.category() != std::system_category());
}

TEST_CASE("user_error of a message equal to a stream error's is not that stream error") {
  const std::error_code u = sluice::user_error("write after end");
  CHECK(u != errc::write_after_end);
  CHECK(code_name(u) == "write after end");
}

TEST_CASE("stream_error is a std::system_error carrying the code") {
  const sluice::stream_error e(make_error_code(errc::invalid_high_water_mark), "bad options");
  const std::system_error& base = e;
  CHECK(base.code() == errc::invalid_high_water_mark);
  CHECK(std::string(e.what()).find("bad options") != std::string::npos);
}
