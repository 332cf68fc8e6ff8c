// edgeattn: the command-line tool. `edgeattn <command> [options]`; `edgeattn <command> --help`.
//
// Exit status: 0 success, 1 failure (bad input data, I/O), 2 usage mistake (unknown command or
// option, malformed value).
#include <iostream>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "edgeattn/core/error.hpp"

namespace {

struct Command {
  std::vector<std::string> words;  // e.g. {"bench", "attention"}
  const char* summary;
  int (*run)(std::span<const std::string>);
};

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {{"demo"},
       "multi-head attention on a synthetic Cora-sized graph, sparse vs dense, explained",
       edgeattn::cli::run_demo},
      {{"bench", "attention"},
       "time one attention configuration, print one JSON object",
       edgeattn::cli::run_bench_attention},
      {{"bench", "write-inputs"},
       "write one peer-suite input (graph, features, labels, split) as .npz",
       edgeattn::cli::run_bench_write_inputs},
      {{"bench", "layer"},
       "time one GATConv/GATv2Conv/TransformerConv layer on an input, JSON",
       edgeattn::cli::run_bench_layer},
      {{"bench", "graphblas"},
       "time SuiteSparse:GraphBLAS SDDMM + softmax + SpMM on an input, JSON",
       edgeattn::cli::run_bench_graphblas},
      {{"bench", "limits"},
       "measure STREAM triad, FMA peak and random gather, JSON",
       edgeattn::cli::run_bench_limits},
      {{"train"}, "train a graph attention network for node classification", edgeattn::cli::run_train},
      {{"partition"},
       "partition a dataset into one file per rank for train --distributed",
       edgeattn::cli::run_partition},
      {{"eval"}, "evaluate a saved model on a dataset", edgeattn::cli::run_eval},
      {{"predict"}, "predict node classes with a saved model", edgeattn::cli::run_predict},
      {{"dataset", "info"},
       "load a dataset (name or path) and print its statistics",
       edgeattn::cli::run_dataset_info},
      {{"dataset", "download"},
       "download a named dataset's files into the cache and verify them",
       edgeattn::cli::run_dataset_download},
      {{"dataset", "list"},
       "list the named datasets, where they are on disk and where they come from",
       edgeattn::cli::run_dataset_list},
  };
  return table;
}

std::string name_of(const Command& c) {
  std::string name;
  for (const std::string& w : c.words) name += (name.empty() ? "" : " ") + w;
  return name;
}

std::string overview() {
  std::string text = "usage: edgeattn <command> [options]\n\ncommands:\n";
  for (const Command& c : commands()) {
    const std::string name = name_of(c);
    text += "  " + name + std::string(name.size() < 20 ? 20 - name.size() : 1, ' ') + c.summary + "\n";
  }
  return text + "\n`edgeattn <command> --help` lists a command's options.\n";
}

// The command whose words start `args`, or null.
const Command* match(std::span<const std::string> args) {
  for (const Command& c : commands()) {
    if (args.size() < c.words.size()) continue;
    bool ok = true;
    for (size_t i = 0; i < c.words.size(); ++i) ok = ok && args[i] == c.words[i];
    if (ok) return &c;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << overview();
    return args.empty() ? 2 : 0;
  }
  const Command* command = match(args);
  if (command == nullptr) {
    std::string subcommands;  // when args[0] names a group such as "bench"
    for (const Command& c : commands())
      if (c.words.size() > 1 && c.words[0] == args[0])
        subcommands += (subcommands.empty() ? "" : ", ") + c.words[1];
    if (!subcommands.empty()) {
      std::cerr << "edgeattn " << args[0] << ": "
                << (args.size() > 1 ? "unknown subcommand '" + args[1] + "'"
                                    : std::string("missing subcommand"))
                << "; expected one of: " << subcommands << "\n";
      return 2;
    }
    std::cerr << "edgeattn: unknown command '" << args[0] << "'\n\n" << overview();
    return 2;
  }
  try {
    return command->run(std::span<const std::string>(args).subspan(command->words.size()));
  } catch (const edgeattn::cli::UsageError& e) {
    std::cerr << "edgeattn " << name_of(*command) << ": " << e.what() << "\n(see `edgeattn "
              << name_of(*command) << " --help`)\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // Sizes the library can foresee (graphs, samples, models) are checked with a message of their
    // own; this is the rest: say what it is and where to look.
    std::cerr << "edgeattn " << name_of(*command)
              << ": error: out of memory (std::bad_alloc): the command needs more memory than the system "
                 "could give; give it smaller sizes (see `edgeattn "
              << name_of(*command) << " --help`) or run it where there is more memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "edgeattn " << name_of(*command) << ": error: " << e.what() << "\n";
    return 1;
  }
}
