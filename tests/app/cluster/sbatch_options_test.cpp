// NOTE [sbatch option parsing] (app/launch/slurm/sbatch_options.h): #SBATCH lines
// read as sbatch reads them, and the check of launch.slurm.extra_args that
// rests on it (issue 42 item 2): the options the script sets, in every form
// getopt_long takes, and --export values that run code.
#include "app/launch/slurm/sbatch_options.h"

#include <gtest/gtest.h>

#include "app/launch/slurm/slurm_script.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::app::cluster {
namespace {

// "name=value" per option ("name" without a value).
std::vector<std::string> parsed(const std::string& line) {
  auto options = parseSbatchLine(line);
  EXPECT_TRUE(options.isOk()) << line << ": " << options.status().message();
  std::vector<std::string> out;
  if (!options) return out;
  for (const auto& o : options.value()) out.push_back(o.hasValue ? o.name + "=" + o.value : o.name);
  return out;
}

std::string refusal(const std::string& line) {
  auto options = parseSbatchLine(line);
  EXPECT_FALSE(options.isOk()) << line;
  return options ? std::string() : options.status().message();
}

using V = std::vector<std::string>;

TEST(SbatchOptions, ShortFormsAttachedSeparateAndClustered) {
  EXPECT_EQ(parsed("-D/x"), V{"chdir=/x"});
  EXPECT_EQ(parsed("-D /x"), V{"chdir=/x"});
  EXPECT_EQ(parsed("-N64"), V{"nodes=64"});
  EXPECT_EQ(parsed("-o/x/%j.out"), V{"output=/x/%j.out"});
  EXPECT_EQ(parsed("-HD/x"), (V{"hold", "chdir=/x"}));
  EXPECT_EQ(parsed("-HJ name"), (V{"hold", "job-name=name"}));
  EXPECT_EQ(parsed("-k"), V{"no-kill"});  // optional value: only attached
  EXPECT_EQ(refusal("-D"), "'-D' needs a value");
  EXPECT_NE(refusal("-y").find("'-y'"), std::string::npos);
}

TEST(SbatchOptions, LongFormsPrefixesAndValues) {
  EXPECT_EQ(parsed("--chd=/x"), V{"chdir=/x"});
  EXPECT_EQ(parsed("--out=/x"), V{"output=/x"});
  EXPECT_EQ(parsed("--chdir /x"), V{"chdir=/x"});
  EXPECT_EQ(parsed("--export NONE"), V{"export=NONE"});  // required value: the next word
  EXPECT_EQ(parsed("--export=ALL"), V{"export=ALL"});    // exact wins over --export-file
  EXPECT_EQ(parsed("--export-f=/f"), V{"export-file=/f"});
  EXPECT_EQ(parsed("--tasks-per=4"), V{"tasks-per-node=4"});
  EXPECT_EQ(parsed("--exclusive"), V{"exclusive"});        // optional value: "=" only
  EXPECT_EQ(parsed("--comment -D/x"), V{"comment=-D/x"});  // a required value may start with '-'
  EXPECT_EQ(parsed("--mem=64G --exclusive"), (V{"mem=64G", "exclusive"}));
  EXPECT_NE(refusal("--e=x").find("ambiguous"), std::string::npos);
  EXPECT_NE(refusal("--no-such-option").find("not an sbatch option"), std::string::npos);
  EXPECT_NE(refusal("--requeue=1").find("takes no value"), std::string::npos);
  EXPECT_NE(refusal("--").find("'--'"), std::string::npos);
  EXPECT_NE(refusal("mem=1G").find("not an option"), std::string::npos);
}

TEST(SbatchOptions, WordsAreSplitAndUnquotedAsSbatchDoes) {
  EXPECT_EQ(parsed("--comment=\"two words\""), V{"comment=two words"});
  EXPECT_EQ(parsed("--comment='two words'"), V{"comment=two words"});
  EXPECT_EQ(parsed("--comment=a\\ b"), V{"comment=a b"});
  EXPECT_EQ(parsed("\"--out\"=/x"), V{"output=/x"});  // quotes do not hide an option
  EXPECT_NE(refusal("--mem=1G #--chdir=/x").find("'#'"), std::string::npos);
  EXPECT_NE(refusal("--comment=\"open").find("unterminated"), std::string::npos);
}

TEST(SbatchOptions, UnsafeExportNames) {
  EXPECT_EQ(unsafeExportNames("ALL,BASH_ENV=$(touch${IFS}/tmp/CANARY)"), V{"BASH_ENV"});
  EXPECT_EQ(unsafeExportNames("NONE,ENV=/x,LD_PRELOAD=/y.so"), (V{"ENV", "LD_PRELOAD"}));
  EXPECT_EQ(unsafeExportNames("A=\"x,BASH_FUNC_seq%%=() { id; }\""), V{"BASH_FUNC_seq%%"});
  EXPECT_EQ(unsafeExportNames("ALL,SHELLOPTS=xtrace,PS4=$(id)"), (V{"SHELLOPTS", "PS4"}));
  EXPECT_EQ(unsafeExportNames("BASH_ENV"), V{"BASH_ENV"});
  EXPECT_TRUE(unsafeExportNames("ALL,OMP_NUM_THREADS=4,ENVIRONMENT=x,MY_LD_PATH=1").empty());
}

// validateSlurmJob on launch.slurm.extra_args: one problem per item, naming it.
std::string problemsOf(const std::vector<std::string>& extraArgs) {
  protocol::RunConfig c = protocol::defaultRunConfig();
  c.name = "tiny";
  c.launch.kind = "slurm";
  c.launch.slurm.extra_args = extraArgs;
  return protocol::formatProblems(validateSlurmJob(c, {"/scratch/run", "flamingo-train", ""}));
}

TEST(SbatchOptions, Issue42ExtraArgsThatRunCodeOrMoveTheJobAreRefused) {
  for (const std::string arg :
       {"--export=ALL,BASH_ENV=$(touch${IFS}/tmp/CANARY)", "--exp=LD_PRELOAD=/x.so", "--export ENV=/x",
        "-D/x", "-o/x", "-N64", "--chd=/x", "--out=/x", "--ntasks-per-n=9", "--tasks-per-node=9", "-HJ x",
        "--wrap=id", "--export-file=/f", "#SBATCH -e/x", "--mem=1G -n4"}) {
    const std::string m = problemsOf({arg});
    EXPECT_NE(m.find("launch.slurm.extra_args[0]"), std::string::npos) << arg << ": " << m;
  }
  const std::string m = problemsOf({"--export=ALL,BASH_ENV=$(touch${IFS}/tmp/CANARY)"});
  EXPECT_NE(m.find("BASH_ENV"), std::string::npos) << m;
  EXPECT_NE(problemsOf({"--chd=/x"}).find("--chdir"), std::string::npos);
}

TEST(SbatchOptions, OrdinaryExtraArgsPass) {
  for (const std::string arg :
       {"--mem=64G", "#SBATCH --exclusive", "--comment=\"two words\"", "-w node1", "--nodelist=a,b",
        "--export=ALL,OMP_NUM_THREADS=4", "--gres=gpu:2", "--constraint=a100 --qos=high", "-C a100"}) {
    EXPECT_EQ(problemsOf({arg}), "") << arg;
  }
}

}  // namespace
}  // namespace fs::app::cluster
