// The batch script generator and the SLURM output parsers, without a cluster:
// the #SBATCH lines a config gives, validation messages naming the field,
// hostile run directories surviving a real bash (a stand-in srun prints its
// arguments), and squeue / scontrol lines parsed to rows.
#include "app/launch/slurm/slurm_script.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "app/launch/slurm/slurm_jobs.h"
#include "app/launch/slurm/slurm_poller.h"
#include "app/remote/local_host.h"
#include "backend/protocol/cmdline/shell_words.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::app::cluster {
namespace {

protocol::RunConfig slurmConfig() {
  protocol::RunConfig c = protocol::defaultRunConfig();
  c.name = "tiny";
  c.launch.kind = "slurm";
  c.launch.nnodes = 2;
  c.launch.nproc_per_node = 4;
  c.launch.threads_per_rank = 3;
  c.launch.slurm.partition = "gpu";
  c.launch.slurm.account = "proj-1";
  c.launch.slurm.time_limit = "1-00:00:00";
  c.launch.slurm.gpus_per_node = 4;
  c.launch.slurm.extra_args = {"--mem=64G", "#SBATCH --exclusive", "--comment=\"two words\""};
  return c;
}

SlurmJobSpec spec(const std::string& run) {
  return {run, "/opt/fs/bin/flamingo-train", ""};
}

TEST(SlurmScriptTest, SbatchLinesFollowTheConfig) {
  auto script = makeSlurmScript(slurmConfig(), spec("/scratch/runs/tiny"));
  ASSERT_TRUE(script.isOk()) << script.status().message();
  const std::string expected =
      "#!/bin/bash\n"
      "#SBATCH --job-name=\"tiny\"\n"
      "#SBATCH --nodes=2\n"
      "#SBATCH --ntasks-per-node=4\n"
      "#SBATCH --cpus-per-task=3\n"
      "#SBATCH --gpus-per-node=4\n"
      "#SBATCH --partition=gpu\n"
      "#SBATCH --account=proj-1\n"
      "#SBATCH --time=1-00:00:00\n"
      "#SBATCH --signal=TERM@300\n"
      "#SBATCH --requeue\n"
      "#SBATCH --chdir=\"/scratch/runs/tiny\"\n"
      "#SBATCH --output=\"/scratch/runs/tiny/logs/slurm-%j.out\"\n"
      "#SBATCH --open-mode=append\n"
      "#SBATCH --mem=64G\n"
      "#SBATCH --exclusive\n"
      "#SBATCH --comment=\"two words\"\n";
  EXPECT_EQ(script->substr(0, expected.size()), expected);
  EXPECT_NE(
      script->find("exec srun --kill-on-bad-exit=1 --nodes=2 --ntasks-per-node=4 --cpus-per-task=3 \\\n"
                   "  /opt/fs/bin/flamingo-train train --config /scratch/runs/tiny/config.yaml --run-dir "
                   "/scratch/runs/tiny --set launch.kind=external\n"),
      std::string::npos)
      << script.value();
}

TEST(SlurmScriptTest, ApprovedPipeCommandsAddAllowPipe) {
  auto s = spec("/scratch/runs/tiny");
  s.allow_pipe = true;
  auto script = makeSlurmScript(slurmConfig(), s);
  ASSERT_TRUE(script.isOk()) << script.status().message();
  EXPECT_NE(script->find(" --run-dir /scratch/runs/tiny --set launch.kind=external --allow-pipe\n"),
            std::string::npos)
      << script.value();
}

TEST(SlurmScriptTest, UnsetOptionsAreLeftOut) {
  protocol::RunConfig c = protocol::defaultRunConfig();
  c.launch.slurm = {};
  c.launch.threads_per_rank = 0;
  auto script = makeSlurmScript(c, spec("/r"));
  ASSERT_TRUE(script.isOk()) << script.status().message();
  for (const char* absent :
       {"--partition", "--account", "--time", "--signal", "--gpus-per-node", "--cpus-per-task"}) {
    EXPECT_EQ(script->find(absent), std::string::npos) << absent << " in\n" << script.value();
  }
}

TEST(SlurmScriptTest, ProblemsNameTheirField) {
  protocol::RunConfig c = slurmConfig();
  c.launch.slurm.partition = "gpu;rm -rf /";
  c.launch.slurm.account = "a b";
  c.launch.slurm.time_limit = "tomorrow";
  c.launch.slurm.extra_args = {"--mem=1G\n#SBATCH --x", "mem=1G", "--output=/elsewhere", "-J other"};
  auto script = makeSlurmScript(c, spec("relative/run"));
  ASSERT_FALSE(script.isOk());
  const std::string& m = script.status().message();
  for (const char* field : {"launch.slurm.partition", "launch.slurm.account", "launch.slurm.time_limit",
                            "launch.slurm.extra_args[0]", "launch.slurm.extra_args[1]",
                            "launch.slurm.extra_args[2]", "launch.slurm.extra_args[3]", "run directory"}) {
    EXPECT_NE(m.find(field), std::string::npos) << field << " not in: " << m;
  }
  EXPECT_NE(m.find("'tomorrow'"), std::string::npos) << m;
  EXPECT_NE(m.find("'--output=/elsewhere' is --output, which the app sets"), std::string::npos) << m;
  EXPECT_EQ(validateSlurmJob(slurmConfig(), spec("/r")).size(), 0u);
  EXPECT_FALSE(makeSlurmScript(slurmConfig(), spec("/r/with\\backslash")).isOk());
  EXPECT_FALSE(makeSlurmScript(slurmConfig(), spec("/r/with\nnewline")).isOk());
}

TEST(SlurmScriptTest, QuoteForScript) {
  EXPECT_EQ(protocol::quoteShellWord("/plain/path-1.yaml"), "/plain/path-1.yaml");
  EXPECT_EQ(protocol::quoteShellWord(""), "''");
  EXPECT_EQ(protocol::quoteShellWord("a b"), "'a b'");
  EXPECT_EQ(protocol::quoteShellWord("it's"), "'it'\\''s'");
  EXPECT_EQ(protocol::quoteShellWord("$(id)`x`"), "'$(id)`x`'");
}

// The shell part run by a real bash, with an srun that prints its arguments.
TEST(SlurmScriptTest, HostileRunDirectoriesReachTheEngineVerbatim) {
  const std::string bin = "/tmp/fs_slurm_script_test." + std::to_string(::getpid());
  std::filesystem::create_directories(bin);
  remote::LocalHost host;
  ASSERT_TRUE(host.writeFileAtomic(bin + "/srun",
                                   "#!/bin/sh\nprintf '{%s}' \"$MASTER_PORT\"\nprintf '[%s]' \"$@\"\n", 0755)
                  .isOk());
  // Something listens on the port job 7 would take (this test, or whoever had it already).
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(20007);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) ::listen(listener, 1);
  const std::string run = "/tmp/it's a \"run\" $HOME `id` $(id) ; & | * %j ~";
  auto script = makeSlurmScript(slurmConfig(), {run, "/opt/my engine/flamingo-train", "job's \"name\""});
  ASSERT_TRUE(script.isOk()) << script.status().message();
  auto r =
      host.run({"env", "PATH=" + bin + ":/usr/bin:/bin", "SLURM_JOB_ID=7", "bash", "-c", script.value()});
  std::filesystem::remove_all(bin);
  ::close(listener);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  // MASTER_PORT: from the job id (20000 + 7), moved past the port in use.
  const int port = std::stoi(r->out.substr(r->out.find('{') + 1));
  EXPECT_GT(port, 20007) << r->out;
  EXPECT_LT(port, 20107) << r->out;
  EXPECT_NE(r->out.find("[/opt/my engine/flamingo-train][train][--config][" + run +
                        "/config.yaml][--run-dir][" + run + "][--set][launch.kind=external]"),
            std::string::npos)
      << r->out;
  // sbatch's #SBATCH syntax: double quotes, '\' escapes, '%' doubled in the log pattern.
  EXPECT_NE(script->find("#SBATCH --job-name=\"job's \\\"name\\\"\"\n"), std::string::npos) << script.value();
  EXPECT_NE(script->find("#SBATCH --output=\"/tmp/it's a \\\"run\\\" $HOME `id` $(id) ; & | * %%j ~/logs/"
                         "slurm-%j.out\"\n"),
            std::string::npos)
      << script.value();
}

// launch.env (NOTE [Launch environment]): exported by the script, quoted, and srun --export=ALL
// hands the script's environment to every task.
TEST(SlurmScriptTest, LaunchEnvIsExportedQuotedAndSrunExportsAll) {
  protocol::RunConfig c = slurmConfig();
  auto plain = makeSlurmScript(c, spec("/r"));
  ASSERT_TRUE(plain.isOk()) << plain.status().message();
  EXPECT_EQ(plain->find("export OPENBLAS"), std::string::npos) << plain.value();
  EXPECT_EQ(plain->find("--export"), std::string::npos) << plain.value();
  c.launch.env = {{"OPENBLAS_CORETYPE", "Haswell"}, {"ODD", "it's $(id) `id` \"q\""}, {"EMPTY", ""}};
  auto script = makeSlurmScript(c, spec("/r"));
  ASSERT_TRUE(script.isOk()) << script.status().message();
  EXPECT_NE(script->find("export EMPTY=''\n"
                         "export ODD='it'\\''s $(id) `id` \"q\"'\n"
                         "export OPENBLAS_CORETYPE=Haswell\n"),
            std::string::npos)
      << script.value();
  EXPECT_NE(script->find("exec srun --kill-on-bad-exit=1 --export=ALL --nodes=2 --ntasks-per-node=4 "),
            std::string::npos)
      << script.value();
  // Before the first command sbatch reads #SBATCH lines: the exports come after all of them.
  EXPECT_LT(script->rfind("#SBATCH"), script->find("export OPENBLAS_CORETYPE")) << script.value();
}

TEST(SlurmScriptTest, LaunchEnvProblemsNameTheirField) {
  protocol::RunConfig c = slurmConfig();
  c.launch.env = {{"RANK", "1"}, {"BAD NAME", "x"}, {"NL", "a\nb"}, {"SLURM_CPU_BIND", "none"}, {"OK", "y"}};
  auto script = makeSlurmScript(c, spec("/r"));
  ASSERT_FALSE(script.isOk());
  for (const char* field :
       {"launch.env.RANK", "launch.env.BAD NAME", "launch.env.NL", "launch.env.SLURM_CPU_BIND"})
    EXPECT_NE(script.status().message().find(field), std::string::npos)
        << field << " not in: " << script.status().message();
  EXPECT_EQ(script.status().message().find("launch.env.OK"), std::string::npos) << script.status().message();
}

// The script run by a real bash, with an srun that prints what each task would get (srun passes its
// environment on): a value with spaces, quotes and $(...) arrives as written, and nothing runs.
TEST(SlurmScriptTest, LaunchEnvReachesTheTasksVerbatim) {
  const std::string bin = "/tmp/fs_slurm_env_test." + std::to_string(::getpid());
  std::filesystem::create_directories(bin);
  const std::string canary = bin + "/canary";
  remote::LocalHost host;
  ASSERT_TRUE(host.writeFileAtomic(bin + "/srun",
                                   "#!/bin/sh\nprintf '[%s]' \"$1\" \"$2\" \"$FS_PLAIN\" \"$FS_HOSTILE\" "
                                   "\"${FS_EMPTY-unset}\"\n",
                                   0755)
                  .isOk());
  const std::string hostile =
      "it's a \"v\" $(touch " + canary + ") `touch " + canary + "` ; | & * ~ \\ $HOME %j ";
  protocol::RunConfig c = slurmConfig();
  c.launch.env = {{"FS_PLAIN", "Haswell"}, {"FS_HOSTILE", hostile}, {"FS_EMPTY", ""}};
  auto script = makeSlurmScript(c, spec("/r"));
  ASSERT_TRUE(script.isOk()) << script.status().message();
  auto r = host.run(
      {"env", "-i", "PATH=" + bin + ":/usr/bin:/bin", "SLURM_JOB_ID=7", "bash", "-c", script.value()});
  const bool executed = std::filesystem::exists(canary);
  std::filesystem::remove_all(bin);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_NE(r->out.find("[--kill-on-bad-exit=1][--export=ALL][Haswell][" + hostile + "][]"),
            std::string::npos)
      << r->out;
  EXPECT_FALSE(executed) << "a launch.env value was executed by the batch script";
}

// The run directory of a previewed script, read back as sbatch reads --chdir.
TEST(SlurmScriptTest, RunDirectoryIsReadBackFromAScript) {
  for (const std::string run : {"/plain/run-1", "/tmp/it's a \"run\" $HOME `id` $(id) ; & | * %j ~"}) {
    auto script = makeSlurmScript(slurmConfig(), {run, "/opt/fs/bin/flamingo-train", ""});
    ASSERT_TRUE(script.isOk()) << script.status().message();
    EXPECT_EQ(slurmScriptRunDir(script.value()), run) << script.value();
  }
  EXPECT_EQ(slurmScriptRunDir("#!/bin/bash\n#SBATCH -D /a/b\n#SBATCH --chdir=\"/c d\\\\e\"\n"), "/c d\\e");
  EXPECT_EQ(slurmScriptRunDir("#!/bin/bash\n\n  # a comment\n#SBATCH -D /a/b --other\n"), "/a/b");
  // After the first command sbatch reads no more directives.
  EXPECT_EQ(slurmScriptRunDir("#!/bin/bash\n#SBATCH --chdir=/a\necho hi\n#SBATCH --chdir=/b\n"), "/a");
  EXPECT_EQ(slurmScriptRunDir("#!/bin/bash\necho hi\n"), "");
}

TEST(SlurmJobsTest, SubmitRefusesARunDirectoryWithAnotherConfig) {
  const std::string run = "/tmp/fs_slurm_submit_test." + std::to_string(::getpid());
  std::filesystem::remove_all(run);
  remote::LocalHost host;
  ASSERT_TRUE(host.makeDirs(run).isOk());
  protocol::RunConfig other = slurmConfig();
  other.seed = 12345;
  ASSERT_TRUE(host.writeFileAtomic(run + "/config.yaml", protocol::dumpConfigYaml(other)).isOk());
  SlurmJobs jobs(host, {"sbatch-must-not-run"});
  auto id = jobs.submit(run, "#!/bin/bash\n", slurmConfig());
  std::filesystem::remove_all(run);
  ASSERT_FALSE(id.isOk());
  EXPECT_NE(id.status().message().find(run + "/config.yaml holds a different config"), std::string::npos)
      << id.status().message();
}

TEST(SlurmParseTest, SqueueRows) {
  const std::string out =
      "12\x1fmy job\x1fRUNNING\x1fNone\x1f"
      "1:02:03\x1f"
      "2\x1fnode[01-02]\n"
      "13_4\x1fx\x1fPENDING\x1f(BeginTime)\x1f"
      "0:00\x1f"
      "1\x1f\n"
      "14\x1fy\x1fSOME_NEW_STATE\x1fNone\x1f"
      "0:01\x1f"
      "1\x1fn1\n";
  auto rows = parseSqueue(out);
  ASSERT_TRUE(rows.isOk()) << rows.status().message();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ(rows->at(0), (SlurmJobRow{"12", "my job", "RUNNING", "None", "1:02:03", "2", "node[01-02]", ""}));
  EXPECT_EQ(rows->at(1).id, "13_4");
  EXPECT_EQ(rows->at(1).nodelist, "");
  EXPECT_EQ(rows->at(2).state, "SOME_NEW_STATE");
  EXPECT_FALSE(isActiveState("SOME_NEW_STATE"));
  EXPECT_TRUE(isActiveState("PENDING"));
  auto bad = parseSqueue("12 RUNNING\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("'12 RUNNING'"), std::string::npos);
  EXPECT_EQ(squeueArgs({"1", "2"}).back(), "--jobs=1,2");
  // Ended jobs too: squeue's default states are pending, running and completing only.
  EXPECT_EQ(squeueArgs({"1", "2"}).rbegin()[1], "--states=all");
  EXPECT_EQ(squeueArgs({}).back(), "--me");
}

TEST(SlurmParseTest, ScontrolAndJobcompLines) {
  const std::string line =
      "JobId=2 JobName=my proto UserId=root(0) JobState=CANCELLED Reason=None Requeue=1 ExitCode=0:15 "
      "RunTime=00:00:02 NodeList=vm NumNodes=1 NtasksPerN:B:S:C=2:0:*:* TRES=cpu=2,node=1 "
      "WorkDir=/tmp/a b StdOut=/tmp/a b/slurm-2.out";
  const auto f = parseKeyValues(line);
  EXPECT_EQ(f.at("JobName"), "my proto");
  EXPECT_EQ(f.at("TRES"), "cpu=2,node=1");
  EXPECT_EQ(f.at("WorkDir"), "/tmp/a b");
  EXPECT_EQ(f.at("NtasksPerN:B:S:C"), "2:0:*:*");
  const SlurmJobRow row = rowFromKeyValues(f);
  EXPECT_EQ(row, (SlurmJobRow{"2", "my proto", "CANCELLED", "None", "00:00:02", "1", "vm", "0:15"}));
  const auto comp = rowFromKeyValues(parseKeyValues(
      "JobId=3 UserId=root(0) GroupId=root(0) Name=sbatch JobState=FAILED Partition=debug NodeList=(null) "
      "NodeCnt=0 ExitCode=3:0"));
  EXPECT_EQ(comp.name, "sbatch");
  EXPECT_EQ(comp.state, "FAILED");
  EXPECT_EQ(comp.nodelist, "");
  EXPECT_EQ(comp.exit_code, "3:0");
  EXPECT_TRUE(SlurmJobs::isJobId("123_4"));
  EXPECT_FALSE(SlurmJobs::isJobId("12;rm"));
}

// NOTE [No std::regex on SLURM output]: a long word or id overflowed the stack
// (fuzz/regressions/slurm/).
TEST(SlurmParseTest, LongWordsAndIdsParseWithoutRecursion) {
  const std::string word(1 << 20, 'a');
  const auto f = parseKeyValues("JobId=5 Comment= " + word + " JobState=RUNNING");
  EXPECT_EQ(f.at("Comment"), word);
  EXPECT_EQ(f.at("JobState"), "RUNNING");
  EXPECT_EQ(parseKeyValues(word + "=1 " + word).at(word), "1 " + word);
  const std::string id(1 << 20, '7');
  const std::string sep = "\x1f";
  auto rows = parseSqueue(id + "_1" + sep + "x" + sep + "RUNNING" + sep + "None" + sep + "0:01" + sep + "1" +
                          sep + "n1\n");
  ASSERT_TRUE(rows.isOk()) << rows.status().message().substr(0, 200);
  EXPECT_EQ(rows->at(0).id, id + "_1");
  EXPECT_TRUE(SlurmJobs::isJobId(id));
  EXPECT_FALSE(SlurmJobs::isJobId(id + "_"));
  EXPECT_FALSE(SlurmJobs::isJobId("_1"));
  EXPECT_FALSE(SlurmJobs::isJobId(""));
  EXPECT_FALSE(SlurmJobs::isJobId("1_2_3"));
  // Keys only at a word's start, as before: "TRES=cpu=2" is one key.
  EXPECT_EQ(parseKeyValues("TRES=cpu=2,node=1 a=b").at("TRES"), "cpu=2,node=1");
  EXPECT_EQ(parseKeyValues("TRES=cpu=2,node=1 a=b").count("cpu"), 0u);
}

TEST(SlurmPollerTest, BackoffDoublesUpToTheCap) {
  EXPECT_EQ(SlurmPoller::delayAfter(0), SlurmPoller::kIntervalMs);
  EXPECT_EQ(SlurmPoller::delayAfter(1), 2 * SlurmPoller::kIntervalMs);
  EXPECT_EQ(SlurmPoller::delayAfter(3), 8 * SlurmPoller::kIntervalMs);
  EXPECT_EQ(SlurmPoller::delayAfter(50), SlurmPoller::kMaxBackoffMs);
}

}  // namespace
}  // namespace fs::app::cluster
