// How doctest prints the library's values in a failed assertion.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <system_error>

#include "sluice/base/errors.h"

namespace doctest {
template <>
struct StringMaker<std::error_code> {
  static String convert(const std::error_code& ec) {
    const std::string s = ec ? sluice::code_name(ec) + " (" + ec.category().name() + ")" : "ok";
    return String(s.c_str());
  }
};
template <>
struct StringMaker<sluice::errc> {
  static String convert(sluice::errc e) { return StringMaker<std::error_code>::convert(make_error_code(e)); }
};
}  // namespace doctest
