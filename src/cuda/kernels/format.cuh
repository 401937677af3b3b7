// fmt for the host code of .cu files. fmt 9 turns its constexpr off under nvcc
// (FMT_USE_CONSTEXPR 0) yet keeps C++20 constexpr functions that call it, which the host compiler
// then rejects (fmtlib/fmt#3543); it is turned back on, as in the g++-compiled files. nvcc's front
// end cannot evaluate fmt's consteval format check, so Format checks the string at run time; its
// output is fmt::format's.
#pragma once

#ifndef FMT_USE_CONSTEXPR
#define FMT_USE_CONSTEXPR 1
#endif
#include <fmt/format.h>

#include <string>
#include <string_view>

namespace backplane::cuda {

template <class... Args>
std::string Format(std::string_view format, const Args&... args) {
  return fmt::format(fmt::runtime(format), args...);
}

}  // namespace backplane::cuda
