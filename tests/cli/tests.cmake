# Tests of the kiln command itself: help, the exit status and message of wrong command
# lines, JSON that parses, and a full `kiln check` on this machine.

if(NOT TARGET kiln_tool)
  return()
endif()

set(KILN_CLI_EXPECT ${CMAKE_CURRENT_LIST_DIR}/expect.cmake)

# name, expected exit status, then options for expect.cmake up to "--", then kiln's arguments.
function(kiln_cli_test name rc)
  add_test(NAME cli_${name}
    COMMAND ${CMAKE_COMMAND} -DKILN=$<TARGET_FILE:kiln_tool>
      "-DEMULATOR=${CMAKE_CROSSCOMPILING_EMULATOR}" -DEXPECT_RC=${rc} ${ARGN})
  set_tests_properties(cli_${name} PROPERTIES LABELS "cli" TIMEOUT 120)
endfunction()

kiln_cli_test(help 0 "-DSTDOUT_REGEX=usage: kiln <command>.*check.*bench"
  -P ${KILN_CLI_EXPECT} -- --help)
kiln_cli_test(help_command 0 "-DSTDOUT_REGEX=usage: kiln bench attention"
  -P ${KILN_CLI_EXPECT} -- help bench)
kiln_cli_test(command_help 0 "-DSTDOUT_REGEX=usage: kiln check"
  -P ${KILN_CLI_EXPECT} -- check --help)
kiln_cli_test(no_command 2 "-DSTDERR_REGEX=usage: kiln <command>"
  -P ${KILN_CLI_EXPECT} --)
kiln_cli_test(bogus_command 2 "-DSTDERR_REGEX=unknown command 'bogus' \\(commands: info"
  -P ${KILN_CLI_EXPECT} -- bogus)
kiln_cli_test(bogus_help_topic 2 "-DSTDERR_REGEX=unknown command 'bogus'"
  -P ${KILN_CLI_EXPECT} -- help bogus)
kiln_cli_test(bad_dtype 2
  "-DSTDERR_REGEX=--dtype: unknown value 'nope' \\(allowed: bf16, f16, f32\\)"
  -P ${KILN_CLI_EXPECT} -- bench attention --dtype nope)
kiln_cli_test(bad_option 2 "-DSTDERR_REGEX=unknown option '--bogus' \\(allowed: .*--json"
  -P ${KILN_CLI_EXPECT} -- info --bogus)
kiln_cli_test(bad_int 2 "-DSTDERR_REGEX=--seqlen: '128,x' is not an integer"
  -P ${KILN_CLI_EXPECT} -- bench attention --seqlen 128,x)
kiln_cli_test(out_of_range 2
  "-DSTDERR_REGEX=--head-dim: 512 is out of range \\(allowed: 8 to 256\\)"
  -P ${KILN_CLI_EXPECT} -- bench attention --head-dim 512)
kiln_cli_test(missing_value 2 "-DSTDERR_REGEX=--iters needs a value"
  -P ${KILN_CLI_EXPECT} -- bench activation --iters)
kiln_cli_test(bad_bench_kind 2
  "-DSTDERR_REGEX=unknown benchmark 'matmul' \\(allowed: attention, activation\\)"
  -P ${KILN_CLI_EXPECT} -- bench matmul)
kiln_cli_test(info_json 0 -DSTDOUT_JSON=1 -P ${KILN_CLI_EXPECT} -- info --json)
kiln_cli_test(check_json 0 -DSTDOUT_JSON=1 "-DSTDOUT_REGEX=\"failed\": 0"
  -P ${KILN_CLI_EXPECT} -- check --backend cpu --json)

# Every op on every backend this machine has; exit status 1 on any failure.
add_test(NAME cli_check COMMAND kiln_tool check)
set_tests_properties(cli_check PROPERTIES LABELS "cli;conformance" TIMEOUT 300)

# A tiny benchmark run end to end: table, JSON results file, and a result within tolerance.
kiln_cli_test(bench_smoke 0 "-DSTDOUT_REGEX=GFLOP/s.*bf16 +64"
  -P ${KILN_CLI_EXPECT} -- bench attention --heads 2 --seqlen 64 --iters 3 --warmup 1
  --rounds 1 --out ${PROJECT_BINARY_DIR}/tests/cli_bench_smoke.json)

kiln_cli_test(targets_json 0 -DSTDOUT_JSON=1 "-DSTDOUT_REGEX=\"name\": \"gfx1151\""
  -P ${KILN_CLI_EXPECT} -- targets --json)
kiln_cli_test(cache_bad_action 2
  "-DSTDERR_REGEX=unknown action 'purge' \\(allowed: ls, clear, warm\\)"
  -P ${KILN_CLI_EXPECT} -- cache purge)
kiln_cli_test(cache_ls_json 0 -DSTDOUT_JSON=1 -P ${KILN_CLI_EXPECT} -- cache ls --json)
set_tests_properties(cli_cache_ls_json PROPERTIES
  ENVIRONMENT "KILN_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/cli_cache")
kiln_cli_test(build_bad_target 2 "-DSTDERR_REGEX=--targets: .*'gfx9999'.*known: sm_80"
  -P ${KILN_CLI_EXPECT} -- build --targets sm_90,gfx9999 --out ${PROJECT_BINARY_DIR}/tests/aot)
kiln_cli_test(build_needs_targets 2 "-DSTDERR_REGEX=--targets is required when GPU_ARCHS is not set"
  -P ${KILN_CLI_EXPECT} -- build --out ${PROJECT_BINARY_DIR}/tests/aot)
set_tests_properties(cli_build_needs_targets PROPERTIES ENVIRONMENT "GPU_ARCHS=")
# GPU_ARCHS from the environment: a bad entry there is named as coming from GPU_ARCHS.
kiln_cli_test(build_env_bad_target 2 "-DSTDERR_REGEX=GPU_ARCHS: .*'gfx9998'.*known: sm_80"
  -P ${KILN_CLI_EXPECT} -- build --out ${PROJECT_BINARY_DIR}/tests/aot_env)
set_tests_properties(cli_build_env_bad_target PROPERTIES ENVIRONMENT "GPU_ARCHS=sm_90,gfx9998")
# An explicit --targets wins over the variable (the variable's bad entry is never read).
kiln_cli_test(build_targets_win 2 "-DSTDERR_REGEX=--targets: .*'gfx9997'"
  -P ${KILN_CLI_EXPECT} -- build --targets gfx9997 --out ${PROJECT_BINARY_DIR}/tests/aot_env)
set_tests_properties(cli_build_targets_win PROPERTIES ENVIRONMENT "GPU_ARCHS=gfx9998")
