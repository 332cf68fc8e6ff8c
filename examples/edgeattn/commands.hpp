// The edgeattn tool's subcommands, one file each (cmd_<name>.cpp), dispatched by main.cpp.
// Each takes the arguments after its command words and returns the process exit status; usage
// mistakes throw UsageError (exit 2), failures throw edgeattn::Error (exit 1).
#pragma once

#include <span>
#include <string>

namespace edgeattn::cli {

int run_demo(std::span<const std::string> args);                // edgeattn demo
int run_bench_attention(std::span<const std::string> args);     // edgeattn bench attention
int run_bench_write_inputs(std::span<const std::string> args);  // edgeattn bench write-inputs
int run_bench_limits(std::span<const std::string> args);        // edgeattn bench limits
int run_bench_layer(std::span<const std::string> args);         // edgeattn bench layer
int run_bench_graphblas(std::span<const std::string> args);     // edgeattn bench graphblas
int run_dataset_info(std::span<const std::string> args);        // edgeattn dataset info
int run_dataset_download(std::span<const std::string> args);    // edgeattn dataset download
int run_dataset_list(std::span<const std::string> args);        // edgeattn dataset list
int run_train(std::span<const std::string> args);               // edgeattn train
int run_eval(std::span<const std::string> args);                // edgeattn eval
int run_predict(std::span<const std::string> args);             // edgeattn predict
int run_partition(std::span<const std::string> args);           // edgeattn partition

}  // namespace edgeattn::cli
