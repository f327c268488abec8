/* C test driver for the pyggmlr core: this runner plus one test_<topic>.c file a topic (shared
 * checks in check.h / check.c), built by scripts/sanitize.sh with AddressSanitizer,
 * LeakSanitizer and UndefinedBehaviorSanitizer (it also runs without them).
 *
 * It walks the whole C API: tensors (every source dtype, strided and empty copies), every op
 * forward and backward in f32 and f64 (with a finite-difference gradient check in f64), the tape
 * (nesting, no-grad, clear, stash), gradient maps, optimizers (SGD, momentum, Nesterov, Adam,
 * accumulation, state reads and loads, clipping), layer ops, memory reports, the data-parallel helpers,
 * two threads with their own tapes, and the error paths (NULL, foreign pointers, bad shapes,
 * dtypes and values, huge sizes). At the end every object must be gone: live objects 0 and
 * current bytes 0. Exit status 0 = all checks passed; the failures are printed. */
#include <stdio.h>
#include "check.h"

/* each part leaves nothing alive behind it */
static void run(const char *name, void (*fn)(void))
{
    int64_t before = pg_live_objects();
    fn();
    pg_tape_clear();
    if (pg_live_objects() != before)
        fprintf(stderr, "%s: %lld objects left alive\n", name,
                (long long)(pg_live_objects() - before));
    CHECK(pg_live_objects() == before);
}

int main(void)
{
    run("tensors", test_tensors);
    run("errors", test_errors);
    run("tape", test_tape);
    run("ops", test_ops);
    run("gemm", test_gemm);
    run("optim", test_optim);
    run("optim state", test_optim_state);
    run("state dict", test_state_dict);
    run("memory", test_memory);
    run("dist", test_dist);
    run("threads", test_threads);
    run("attention heads over threads", test_mha_threads);
    run("vectorised math", test_vmath);
    run("elementwise loops per SIMD level", test_vew);
    run("concurrent", test_concurrent);
    run("host", test_host);
    run("codec", test_codec);
    run("codec plan", test_codec_plan);
    run("model-file schema", test_modelfile);
    run("model files on core objects", test_modelfile_model);
    run("model-file config check", test_modelfile_check);
    run("model-file save/load arguments", test_modelfile_args);
    run("model info and file sniffing", test_modelfile_info);
    run("fit plan", test_fit_plan);
    run("fit validation data", test_fit_val);
    run("fit data arguments", test_fit_data);
    run("memory report", test_memory_report);
    run("schedule counts", test_sched);
    run("fit session", test_fit_session);
    run("fit session static", test_fit_session_static);
    run("early stopping", test_fit_stop);
    run("callback states, prints, progress", test_fit_cb);
    run("resume checks", test_fit_resume);
    run("checkpoint run state", test_fit_ckpt);
    run("fit set-up", test_fit_setup);
    run("fit drifts 3", test_fit_drifts3);
    run("history table", test_fit_history);
    run("loss table", test_fit_loss);
    run("layer configs", test_layer_config);
    run("layer shapes", test_layer_shape);
    run("normalization", test_norm);
    run("pooling", test_pool);
    run("padding and upsampling", test_resize);
    run("recurrent", test_rnn);
    run("checkpoint policy", test_checkpoint_policy);
    run("checkpoint path", test_checkpoint_path);
    run("seed rule", test_seed_rule);
    run("lost", test_lost);
    run("hostile", test_hostile);
    run("versions", test_versions);
    run("views", test_views);
    run("index", test_index);
    run("loss options", test_loss_opt);
    run("fit_binary", test_fit_binary);
    run("arg_check", test_arg_check);
    run("fit_args", test_fit_args);
    run("arg_rules", test_arg_rules);
    run("gather_index", test_gather_index);
    run("metrics", test_metrics);
    run("fit weights", test_fit_weight);
    run("predict", test_predict);
    run("convolution", test_conv);
    run("transposed convolution", test_convt);
    run("transposed convolution 1-D", test_convt1d);
    pg_tape_clear();
    pg_memory_counts st;
    pg_memory_stats(&st);
    CHECK(pg_live_objects() == 0);
    CHECK(st.total == 0);
    if (pg_live_objects() != 0 || st.total != 0)
        fprintf(stderr, "left alive: %lld tensors, %lld maps, %lld optimizers, %lld bytes\n",
                (long long)st.live_tensors, (long long)st.live_gradmaps, (long long)st.live_optims,
                (long long)st.total);
    printf("driver: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed != 0;
}
