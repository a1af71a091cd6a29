#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "doppio/util/error.hpp"

// EXPECT that `statement` throws `error_type` whose message holds every one of `parts`.
#define EXPECT_THROW_WITH(statement, error_type, ...)                         \
  do {                                                                        \
    bool thrown = false;                                                      \
    try {                                                                     \
      statement;                                                              \
    } catch (const error_type& error) {                                       \
      thrown = true;                                                          \
      const std::string message = error.what();                               \
      for (const std::string& part : std::vector<std::string>{__VA_ARGS__}) { \
        EXPECT_NE(message.find(part), std::string::npos)                      \
            << "message '" << message << "' lacks '" << part << "'";          \
      }                                                                       \
    }                                                                         \
    EXPECT_TRUE(thrown) << "expected " #error_type " from " #statement;       \
  } while (0)

#define EXPECT_ERROR_WITH(statement, ...) EXPECT_THROW_WITH(statement, ::doppio::Error, __VA_ARGS__)
