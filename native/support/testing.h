// A minimal unit-test harness for the native core (no external dependencies, so the native tests
// build offline with nothing but a C++17 compiler).
//
//   JG_TEST(TrieTest, FindsPrefix) { JG_EXPECT_EQ(1, 1); }
//   JG_TEST_MAIN()   // once per test executable, at the end of the file
//
// Every JG_EXPECT_* failure is reported with file:line and the failing values; the executable
// exits non-zero if any expectation failed, so CTest sees the failure. JG_ASSERT_* also returns
// from the current test. Tests run in registration order; a filter substring may be passed as the
// first command-line argument.
#ifndef JAXGUIDE_NATIVE_SUPPORT_TESTING_H_
#define JAXGUIDE_NATIVE_SUPPORT_TESTING_H_

#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace jaxguide {
namespace testing {

struct TestCase {
  const char* name;
  std::function<void()> body;
};

inline std::vector<TestCase>& Registry() {
  static std::vector<TestCase> tests;
  return tests;
}

inline int& FailureCount() {
  static int failures = 0;
  return failures;
}

struct Registrar {
  Registrar(const char* name, std::function<void()> body) {
    Registry().push_back({name, std::move(body)});
  }
};

template <typename T>
std::string Show(const T& value) {
  std::ostringstream out;
  if constexpr (std::is_same_v<T, std::string>) {
    out << '"' << value << '"';
  } else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
    out << static_cast<int>(value);
  } else {
    out << value;
  }
  return out.str();
}

inline void ReportFailure(const char* file, int line, const std::string& message) {
  ++FailureCount();
  std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, message.c_str());
}

inline int RunAll(int argc, char** argv) {
  const char* filter = argc > 1 ? argv[1] : nullptr;
  int run = 0;
  for (const TestCase& test : Registry()) {
    if (filter != nullptr && std::strstr(test.name, filter) == nullptr) continue;
    const int before = FailureCount();
    test.body();
    ++run;
    std::fprintf(stderr, "[%s] %s\n", FailureCount() == before ? "  OK  " : "FAILED", test.name);
  }
  std::fprintf(stderr, "%d tests, %d failed expectations\n", run, FailureCount());
  return FailureCount() == 0 && run > 0 ? 0 : 1;
}

}  // namespace testing
}  // namespace jaxguide

#define JG_TEST(suite, name)                                                         \
  static void suite##_##name##_body();                                               \
  static ::jaxguide::testing::Registrar suite##_##name##_registrar(#suite "." #name, \
                                                                   suite##_##name##_body); \
  static void suite##_##name##_body()

#define JG_EXPECT_TRUE(cond)                                                              \
  do {                                                                                    \
    if (!(cond)) ::jaxguide::testing::ReportFailure(__FILE__, __LINE__, "expected " #cond); \
  } while (0)

#define JG_EXPECT_FALSE(cond) JG_EXPECT_TRUE(!(cond))

#define JG_EXPECT_OP(a, op, b)                                                              \
  do {                                                                                      \
    const auto& jg_a_ = (a);                                                                \
    const auto& jg_b_ = (b);                                                                \
    if (!(jg_a_ op jg_b_)) {                                                                \
      ::jaxguide::testing::ReportFailure(                                                   \
          __FILE__, __LINE__,                                                               \
          std::string(#a " " #op " " #b " with ") + ::jaxguide::testing::Show(jg_a_) + " vs " + \
              ::jaxguide::testing::Show(jg_b_));                                            \
    }                                                                                       \
  } while (0)

#define JG_EXPECT_EQ(a, b) JG_EXPECT_OP(a, ==, b)
#define JG_EXPECT_NE(a, b) JG_EXPECT_OP(a, !=, b)
#define JG_EXPECT_LT(a, b) JG_EXPECT_OP(a, <, b)
#define JG_EXPECT_LE(a, b) JG_EXPECT_OP(a, <=, b)

#define JG_ASSERT_TRUE(cond)                                                              \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      ::jaxguide::testing::ReportFailure(__FILE__, __LINE__, "expected " #cond);          \
      return;                                                                             \
    }                                                                                     \
  } while (0)

#define JG_EXPECT_THROWS(statement, exception_type)                                         \
  do {                                                                                      \
    bool jg_thrown_ = false;                                                                \
    try {                                                                                   \
      statement;                                                                            \
    } catch (const exception_type&) {                                                       \
      jg_thrown_ = true;                                                                    \
    }                                                                                       \
    if (!jg_thrown_)                                                                        \
      ::jaxguide::testing::ReportFailure(__FILE__, __LINE__,                                \
                                         "expected " #statement " to throw " #exception_type); \
  } while (0)

#define JG_TEST_MAIN() \
  int main(int argc, char** argv) { return ::jaxguide::testing::RunAll(argc, argv); }

#endif  // JAXGUIDE_NATIVE_SUPPORT_TESTING_H_
