// The edgeattn tool's subcommands, one file each (cmd_<name>.cpp), dispatched by main.cpp.
// Each takes the arguments after its command words and returns the process exit status; usage
// mistakes throw UsageError (exit 2), failures throw edgeattn::Error (exit 1).
#pragma once

#include <span>
#include <string>

namespace edgeattn::cli {

int run_demo(std::span<const std::string> args);             // edgeattn demo
int run_bench_attention(std::span<const std::string> args);  // edgeattn bench attention

}  // namespace edgeattn::cli
