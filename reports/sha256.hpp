#pragma once
// SHA-256 (FIPS 180-4) for the reports' Content-Security-Policy: a page lets
// exactly the inline scripts it carries run by listing their hashes
// (`script-src 'sha256-<base64>'`, CSP Level 2), so no other script can.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvsim {

std::array<uint8_t, 32> sha256(std::string_view data);

// RFC 4648 base64 with padding.
std::string base64(const uint8_t* data, size_t size);

// 'sha256-<base64>' as a CSP source expression for an inline script's text.
std::string csp_script_hash(std::string_view script_text);

}  // namespace kvsim
