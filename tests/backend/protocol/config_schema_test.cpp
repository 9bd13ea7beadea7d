// The one declaration: golden defaults and the schema's own invariants.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>

#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/schema.h"
#include "test_util.h"

namespace fs::protocol {
namespace {

// Every schema change shows up as a diff of this file in review.
// Refresh with: FS_UPDATE_GOLDEN=1 build/tests/config_schema_test
TEST(ConfigSchema, DefaultsMatchGoldenFile) {
  const std::string golden = test::sourcePath("tests/assets/golden/default_config.yaml");
  const std::string dumped = dumpConfigYaml(defaultRunConfig(), DumpOptions{.comments = true});
  if (std::getenv("FS_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << dumped;
  }
  EXPECT_EQ(dumped, test::readFile(golden))
      << "schema defaults changed: review, then refresh the golden file";
}

TEST(ConfigSchema, DefaultsAreOpenFlamingoTrainPyDefaults) {
  const RunConfig c = defaultRunConfig();
  EXPECT_EQ(c.model.lm.path, "facebook/opt-1.3b");
  EXPECT_EQ(c.model.lm.tokenizer_path, "facebook/opt-30b");
  EXPECT_EQ(c.model.vision.path, "ViT-L-14");
  EXPECT_EQ(c.model.vision.pretrained, "openai");
  EXPECT_EQ(c.model.cross_attn.every_n_layers, 1);
  EXPECT_EQ(c.name, "openflamingo3B");
  EXPECT_EQ(c.seed, 42);
  EXPECT_DOUBLE_EQ(c.optim.lr, 1e-4);
  EXPECT_EQ(c.optim.scheduler, "constant");
  EXPECT_EQ(c.optim.warmup_steps, 5000);
  EXPECT_DOUBLE_EQ(c.optim.weight_decay, 0.1);
  EXPECT_EQ(c.optim.precision, "fp32");
  EXPECT_EQ(c.optim.epochs, 1);
  EXPECT_EQ(c.optim.grad_accum_steps, 1);
  EXPECT_EQ(c.telemetry.logging_steps, 100);
  EXPECT_EQ(c.parallel.dist_url, "env://");
  EXPECT_EQ(c.parallel.mode, "ddp");
  ASSERT_EQ(c.data.datasets.size(), 2u);
  EXPECT_EQ(c.data.datasets[0].name, "laion");
  EXPECT_EQ(c.data.datasets[1].type, "mmc4");
  for (const auto& d : c.data.datasets) {
    EXPECT_EQ(d.batch_size, 128);
    EXPECT_EQ(d.samples_per_epoch, 10000);
    EXPECT_DOUBLE_EQ(d.loss_multiplier, 1.0);
    EXPECT_EQ(d.workers, 1);
  }
  EXPECT_DOUBLE_EQ(c.data.datasets[1].textsim_threshold, 30.0);
  EXPECT_EQ(c.data.datasets[1].max_num_images, 6);
  EXPECT_EQ(c.data.datasets[1].min_num_images, 1);
  EXPECT_FALSE(c.data.resampled);
  EXPECT_FALSE(c.model.freeze_lm_embeddings);
  EXPECT_FALSE(c.checkpoint.delete_previous);
}

void checkSection(const SectionSpec& s, const std::string& where) {
  static const std::regex snake("^[a-z][a-z0-9_]*$");
  std::set<std::string> keys;
  for (const auto& e : s.entries) {
    const std::string path = where.empty() ? e.key : where + "." + e.key;
    EXPECT_TRUE(std::regex_match(e.key, snake)) << path << " is not snake_case";
    EXPECT_TRUE(keys.insert(e.key).second) << path << " declared twice";
    EXPECT_FALSE(e.help.empty()) << path << " has no help text (the GUI tooltip)";
    if (e.kind == EntrySpec::Kind::kField) {
      if (e.type == FieldType::kEnum) {
        EXPECT_FALSE(e.choices.empty()) << path;
      }
      // A required string may default to empty only where it has no default by nature (dataset names).
      if (!(e.required && std::holds_alternative<std::string>(e.defaultValue))) {
        EXPECT_EQ(checkValue(e, e.defaultValue), "") << path << ": default is not allowed by its own rules";
      }
      if (e.min && e.max) {
        EXPECT_LE(*e.min, *e.max) << path;
      }
    } else {
      checkSection(*e.section, path);
    }
  }
}

TEST(ConfigSchema, EveryFieldIsDeclaredCompletely) {
  checkSection(runConfigSchema(), "");
}

TEST(ConfigSchema, DefaultListElementsNameRealKeys) {
  const auto* data = runConfigSchema().find("data");
  ASSERT_NE(data, nullptr);
  const auto* list = data->section->find("datasets");
  ASSERT_NE(list, nullptr);
  for (const auto& elem : list->defaultElements) {
    for (const auto& [key, value] : elem) EXPECT_NE(list->section->find(key), nullptr) << key;
  }
}

TEST(ConfigSchema, ResolvePathForms) {
  RunConfig c = defaultRunConfig();
  for (const std::string p :
       {"data.datasets[1].batch_size", "data.datasets.1.batch_size", "data.datasets.mmc4.batch_size"}) {
    auto ref = resolvePath(runConfigSchema(), &c, p);
    ASSERT_TRUE(ref.isOk()) << p << ": " << ref.status().message();
    EXPECT_EQ(ref->path, "data.datasets[1].batch_size");
  }
  auto bad = resolvePath(runConfigSchema(), &c, "optim.learning_rat");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("unknown config key 'optim.learning_rat'"), std::string::npos);
  auto section = resolvePath(runConfigSchema(), &c, "model.lm");
  ASSERT_FALSE(section.isOk());
  EXPECT_NE(section.status().message().find("is a section"), std::string::npos);
  auto range = resolvePath(runConfigSchema(), &c, "data.datasets[5].name");
  ASSERT_FALSE(range.isOk());
  EXPECT_NE(range.status().message().find("out of range: the list has 2"), std::string::npos);
}

TEST(ConfigSchema, ValueTextForms) {
  EntrySpec intSpec;
  intSpec.type = FieldType::kInt;
  EXPECT_EQ(std::get<int64_t>(valueFromText(intSpec, "1e8", "x").value()), 100000000);
  EXPECT_EQ(std::get<int64_t>(valueFromText(intSpec, "125_000", "x").value()), 125000);
  EXPECT_FALSE(valueFromText(intSpec, "1.5", "x").isOk());
  EntrySpec floatSpec;
  floatSpec.type = FieldType::kFloat;
  EXPECT_FALSE(valueFromText(floatSpec, "nan", "x").isOk());
  EXPECT_FALSE(valueFromText(floatSpec, "inf", "x").isOk());
  EXPECT_EQ(valueToText(floatSpec, Value(1.0)), "1.0");
  EXPECT_EQ(valueToText(floatSpec, Value(0.1)), "0.1");
  EntrySpec listSpec;
  listSpec.type = FieldType::kStringList;
  EXPECT_EQ(std::get<std::vector<std::string>>(valueFromText(listSpec, "[a, 'b c', d]", "x").value()),
            (std::vector<std::string>{"a", "b c", "d"}));
}

// A string map's text form (valueToText) reads back as itself, for any names and values.
TEST(ConfigSchema, StringMapTextForm) {
  EntrySpec mapSpec;
  mapSpec.type = FieldType::kStringMap;
  EXPECT_EQ(valueToText(mapSpec, Value(StringMap{})), "{}");
  const StringMap m = {
      {"A", "x"},         {"B", "two words"}, {"C", ""}, {"D", "q\"uo'te\\"}, {"E", "line\nbreak\ttab\x01"},
      {"not ident", "v"}, {"", "empty name"}};
  const std::string text = valueToText(mapSpec, Value(m));
  EXPECT_EQ(text,
            "{\"\": \"empty name\", A: \"x\", B: \"two words\", C: \"\", D: \"q\\\"uo'te\\\\\", "
            "E: \"line\\nbreak\\ttab\\x01\", \"not ident\": \"v\"}");
  // An empty name is shown, but refused on the way back (an entry needs a name); the rest survive exactly.
  EXPECT_FALSE(valueFromText(mapSpec, text, "launch.env").isOk());
  StringMap named = m;
  named.erase("");
  auto again = valueFromText(mapSpec, valueToText(mapSpec, Value(named)), "launch.env");
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(std::get<StringMap>(again.value()), named);
  for (const char* forms : {"{A: x, B: 'y z'}", "A=x, B = 'y z'", " { A : \"x\" , B:\"y z\" , } "}) {
    auto v = valueFromText(mapSpec, forms, "p");
    ASSERT_TRUE(v.isOk()) << forms << ": " << v.status().message();
    EXPECT_EQ(std::get<StringMap>(v.value()), (StringMap{{"A", "x"}, {"B", "y z"}})) << forms;
  }
  for (const char* bad : {"{A: x", "{A}", "A", "{A: \"x\" y}", "{A: 1, A: 2}", "{A: \"\\x4\"}"}) {
    EXPECT_FALSE(valueFromText(mapSpec, bad, "p").isOk()) << bad;
  }
  EXPECT_TRUE(std::get<StringMap>(valueFromText(mapSpec, "", "p").value()).empty());
}

}  // namespace
}  // namespace fs::protocol
