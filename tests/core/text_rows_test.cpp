// SPDX-License-Identifier: MIT
#include "sim/core/text_rows.hpp"

#include <cstdio>
#include <doctest/doctest.h>
#include <fstream>

using namespace dtsim;

TEST_SUITE("core") {
  TEST_CASE("read_text_rows: comments and blank lines skipped, fields split at , space tab") {
    const std::string path = "text_rows_test.txt";
    {
      std::ofstream f(path);
      f << "# header comment\n0,1\n\n  2 3  # trailing comment\r\n4,\t5 ,6\n   \n#\n";
    }
    const auto rows = read_text_rows(path);
    std::remove(path.c_str());
    REQUIRE(rows);
    REQUIRE(rows->size() == 3);
    CHECK((*rows)[0].line == 2);
    CHECK((*rows)[0].fields == std::vector<std::string>{"0", "1"});
    CHECK((*rows)[1].line == 4);
    CHECK((*rows)[1].text == "  2 3");
    CHECK((*rows)[1].fields == std::vector<std::string>{"2", "3"});
    CHECK((*rows)[2].line == 5);
    CHECK((*rows)[2].fields == std::vector<std::string>{"4", "5", "6"});
    CHECK_FALSE(read_text_rows("no/such/file.txt"));
  }

  TEST_CASE("parse_number and parse_integer take the whole field or nothing") {
    CHECK(parse_number("0.25") == 0.25);
    CHECK(parse_number("-1e-3") == -1e-3);
    CHECK_FALSE(parse_number("0.25s"));
    CHECK_FALSE(parse_number(""));
    CHECK_FALSE(parse_number("x"));
    CHECK(parse_integer("42") == 42);
    CHECK(parse_integer("-7") == -7);
    CHECK_FALSE(parse_integer("1.5")); // would be 1 with a stream read
    CHECK_FALSE(parse_integer("99999999999999999999"));
    CHECK_FALSE(parse_integer(""));
  }
}
