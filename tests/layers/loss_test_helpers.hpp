#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "doppio/core/common.hpp"

namespace doppio {

// Runs `action`, expects it to throw doppio::Error, and expects every one of `parts` in the
// message (e.g. the layer's name and the offending value).
template <typename Action>
void ExpectErrorMentioning(Action&& action, std::initializer_list<std::string> parts) {
  try {
    action();
    ADD_FAILURE() << "expected doppio::Error";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "message \"" << message << "\" lacks \"" << part << "\"";
    }
  }
}

}  // namespace doppio
