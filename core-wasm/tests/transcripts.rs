//! The transcript scenarios of `airlock_core::testkit`, run against the native core. The gateway's
//! `wasm_core` test runs the same scenarios through the wasm component and compares the logs.

use airlock_core::testkit::{self, Native};

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                testkit::$name(&Native);
            }
        )*
    };
}

scenarios! {
    an_approval_waits_while_the_session_runs_and_approve_runs_the_call,
    an_approval_with_other_arguments_runs_the_call_with_them_and_the_model_is_told,
    a_denied_call_gives_the_model_denied_by_user_and_the_reason,
    a_cancel_while_a_call_waits_for_approval_aborts_it_before_dispatch,
    a_waiting_approval_survives_a_restart_and_runs_once,
    a_waiting_turn_sleeps_and_wakes_where_it_was,
    a_client_tool_call_waits_for_the_clients_result,
    a_client_tool_without_a_result_in_time_fails_tool_timeout,
    a_turn_past_its_time_limit_ends_turn_timeout_keeping_what_streamed,
    a_step_past_its_output_limit_ends_output_limit,
    a_turn_at_its_step_limit_ends_max_steps,
    a_retry_after_past_the_limit_ends_the_turn_with_the_providers_error,
    simple_text_turn_in_canonical_order,
    tool_round_trip_second_request_carries_the_result,
    one_send_one_turn,
    a_step_past_its_retries_fails_over_to_the_next_model,
    idle_steer_starts_a_turn_at_once,
    steer_during_a_tool_lands_at_the_next_step_of_the_same_turn,
    enter_all_writes_the_log_of_a_host_that_enters_every_claim,
    idle_inject_does_not_wake_and_reaches_the_next_request,
    inject_during_a_tool_lands_after_that_steps_results,
    pre_step_reject_blocks_the_turn_with_no_step_events,
    blocked_turn_parks_the_rest_of_the_queue,
    a_paused_step_puts_its_claim_back_and_a_resume_takes_up_where_it_stopped,
    a_resume_after_a_pause_between_steps_sends_the_tools_result,
    a_compaction_at_idle_while_paused_starts_nothing,
    error_turn_parks_the_rest_of_the_queue,
    empty_admitted_batch_makes_no_model_request,
    max_tokens_ends_a_single_step_turn,
    max_tokens_is_sticky_across_a_steered_continuation,
    max_tokens_does_not_leak_into_the_next_turn,
    truncated_tool_calls_are_not_run,
    cancel_mid_stream_commits_the_interrupted_prefix,
    cancel_clears_the_queued_tail,
    cancel_with_keep_inbox_parks_the_queue,
    wake_latch_runs_a_send_that_arrives_while_a_cancel_drains,
    idle_cancel_is_a_no_op,
    disposal_cancels_the_parked_items_of_an_idle_agent,
    cancel_right_after_a_waking_send_gives_one_turn_and_no_step,
    cancel_clears_steering,
    transient_failures_are_retried_then_succeed_in_one_turn,
    persistent_failure_ends_the_turn_with_error_and_no_message,
    undispatched_calls_get_aborted_before_dispatch,
    parallel_tool_results_are_committed_in_model_order,
    unknown_tool_gives_an_error_result_and_the_turn_goes_on,
    queue_edit_remove_and_promote_write_canceled_splices,
    restore_of_a_recorded_log_equals_the_live_state,
    crash_repair_closes_an_open_turn,
    crash_repair_adds_nothing_to_a_balanced_log,
    a_session_restored_at_rest_goes_on_as_the_live_one,
    a_snapshot_and_its_tail_restore_the_live_state,
    accepted_followups_run_after_a_restart,
    a_restart_with_only_injects_pending_starts_no_turn,
    host_events_are_logged_in_place_and_change_nothing_else,
    pressure_compacts_inside_the_turn_that_needed_it,
    a_compaction_keeps_the_last_tool_calls_and_their_results,
    overflow_compacts_once_and_retries_the_step,
    a_second_overflow_ends_the_turn_context_overflow,
    replay_never_asks_for_the_summary_again,
    compact_at_idle_keeps_status_idle_and_latches_a_waking_send,
    a_cancel_abandons_a_compaction_at_idle,
    a_cancel_during_a_turns_compaction_ends_it_aborted,
}

#[test]
fn every_scenario_has_a_named_test() {
    assert_eq!(testkit::SCENARIOS.len(), 62);
}
