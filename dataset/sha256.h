// SHA-256 of bytes and files (through OpenSSL's libcrypto), for dataset manifests: every
// file a dataset lists carries its digest, so `mugraph dataset check` can re-hash it.
#pragma once

#include <string>
#include <string_view>

namespace mugraph::dataset {

std::string sha256Hex(std::string_view bytes);      // 64 lowercase hex digits
std::string sha256OfFile(const std::string& path);  // UserError if unreadable

}  // namespace mugraph::dataset
