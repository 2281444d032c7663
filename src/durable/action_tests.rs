use super::*;

#[test]
fn only_a_start_and_an_attach_pass_output_to_the_caller() {
    for step in [PodStep::Start, PodStep::Attach] {
        assert_eq!(step.output(), StepOutput::Caller, "{step:?}");
    }
    for step in [PodStep::Look, PodStep::Cleanup, PodStep::Kill] {
        assert_eq!(step.output(), StepOutput::Dropped, "{step:?}");
    }
}

#[test]
fn a_finish_keeps_enough_of_its_stdout_for_the_longest_record_it_prints() {
    // A code and two sizes, each as long as it can be, and a newline.
    let longest = format!("255 {} {}\n", u64::MAX, u64::MAX);
    match PodStep::Finish.output() {
        StepOutput::Kept { bytes } => assert!(bytes >= longest.len() as u64, "{bytes}"),
        other => panic!("{other:?}"),
    }
}
