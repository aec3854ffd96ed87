// {fmt}'s compiled part, built once for the whole program.
//
// Debian's libfmt-dev ships its headers and a shared library only, and the binary links its
// libraries statically. The alternative, FMT_HEADER_ONLY, compiles {fmt}'s implementation
// (format-inl.h) into every file that includes <fmt/format.h>, about 120 of the build's files:
// a file with one fmt::format call took 3.5 s instead of 0.5 s at -O2, 4.0 s instead of 0.6 s
// under the sanitizers, and the whole release build on two cores 9:35 instead of 8:33 (g++ 12,
// 2026-12-06). Here it is compiled once, as {fmt}'s own library would be: the functions that
// format-inl.h defines out of line, and the templates that format.h declares but leaves to the
// library.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;

template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> char;
template auto decimal_point_impl(locale_ref) -> wchar_t;

template void buffer<char>::append(const char*, const char*);
template void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);
template void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                         locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
