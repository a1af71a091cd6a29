#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "doppio/util/error.hpp"

// EXPECT that `statement` throws doppio::Error whose message holds every one of `parts`.
#define EXPECT_ERROR_WITH(statement, ...)                                     \
  do {                                                                        \
    bool thrown = false;                                                      \
    try {                                                                     \
      statement;                                                              \
    } catch (const ::doppio::Error& error) {                                  \
      thrown = true;                                                          \
      const std::string message = error.what();                               \
      for (const std::string& part : std::vector<std::string>{__VA_ARGS__}) { \
        EXPECT_NE(message.find(part), std::string::npos)                      \
            << "message '" << message << "' lacks '" << part << "'";          \
      }                                                                       \
    }                                                                         \
    EXPECT_TRUE(thrown) << "expected doppio::Error from " #statement;         \
  } while (0)
