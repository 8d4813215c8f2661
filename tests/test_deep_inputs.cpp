// Inputs nested far deeper than any real one (100k levels): every reader
// stops them with exit 2 and a location, never with a stack overflow in a
// recursive parser, flattener or serializer (SPEC 3: never crash).
#include <gtest/gtest.h>

#include "report_test_helpers.hpp"

namespace kvsim::KVSIM_TEST_FILE_SCOPE {
namespace {

constexpr int kDepth = 100000;

std::string nested_list(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + "1" +
         std::string(static_cast<size_t>(depth), ']');
}

std::string nested_objects(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "{\"a\": ";
  return s + "1" + std::string(static_cast<size_t>(depth), '}');
}

class DeepInputs : public testing::TempFolderTest {
 protected:
  void expect_refused(const testing::CommandResult& r, const std::string& where,
                      const std::string& what) {
    EXPECT_EQ(r.exit_code, 2) << r.output.substr(0, 2000);
    EXPECT_NE(r.output.find(where), std::string::npos) << r.output.substr(0, 2000);
    EXPECT_NE(r.output.find(what), std::string::npos) << r.output.substr(0, 2000);
    EXPECT_FALSE(std::filesystem::exists(path("out")));
  }
};

TEST_F(DeepInputs, CheckRefusesDeepListsAndObjects) {
  const std::string lists = write("lists.json", "{\"a\": " + nested_list(kDepth) + "}");
  expect_refused(kvsim("check " + lists + " --baseline " + lists), "lists.json", "nested deeper");
  const std::string objects = write("objects.json", nested_objects(kDepth));
  expect_refused(kvsim("check " + objects + " --baseline " + objects), "objects.json",
                 "nested deeper");
}

TEST_F(DeepInputs, AScenarioNestedDeeplyIsInvalidYamlAtItsLine) {
  const std::string s = write("deep.yaml", "name: x\ndescription: " + nested_list(kDepth) + "\n");
  expect_refused(kvsim("run " + s + " --out " + path("out")), "deep.yaml:2:", "nested too deeply");
  expect_refused(kvsim("validate " + s), "deep.yaml:2:", "nested too deeply");
}

TEST_F(DeepInputs, AHuggingFaceConfigNestedDeeplyIsRefused) {
  const std::string model = write("config.json", "{\"hidden_size\": " + nested_list(kDepth) + "}");
  expect_refused(kvsim("capacity --device ascend-910b2 --model " + model + " --out " + path("out")),
                 "config.json:1:", "nested too deeply");
}

TEST_F(DeepInputs, ASetValueNestedDeeplyIsRefused) {
  const std::string s = write("s.yaml", testing::small_scenario("s", 4));
  expect_refused(kvsim("run " + s + " --out " + path("out") +
                       " --set 'description=" + nested_list(2000) + "'"),
                 "--set description", "nested too deeply");
}

}  // namespace
}  // namespace kvsim::KVSIM_TEST_FILE_SCOPE
