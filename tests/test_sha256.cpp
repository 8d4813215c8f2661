// SHA-256 against FIPS 180-4's examples (and the NIST long-message vector),
// base64 against RFC 4648's, and the CSP source expression built from them.
#include <gtest/gtest.h>

#include <string>

#include "reports/sha256.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

std::string hex(const std::array<uint8_t, 32>& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const uint8_t b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

TEST(Sha256, MatchesTheStandardsVectors) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the padding boundary (55, 56, 63, 64 bytes) differ.
  EXPECT_NE(hex(sha256(std::string(55, 'x'))), hex(sha256(std::string(56, 'x'))));
  EXPECT_NE(hex(sha256(std::string(63, 'x'))), hex(sha256(std::string(64, 'x'))));
}

TEST(Sha256, Base64AndTheCspSource) {
  const auto b = [](const std::string& s) {
    return base64(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  EXPECT_EQ(b(""), "");
  EXPECT_EQ(b("f"), "Zg==");
  EXPECT_EQ(b("fo"), "Zm8=");
  EXPECT_EQ(b("foo"), "Zm9v");
  EXPECT_EQ(b("foobar"), "Zm9vYmFy");
  // The form CSP Level 2 gives: sha256 of "abc", base64.
  EXPECT_EQ(csp_script_hash("abc"), "'sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0='");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
