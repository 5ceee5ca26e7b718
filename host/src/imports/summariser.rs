//! `scratchpad:mcp/summariser`: the guest's summary requests, sent to the configured model.
//! The time the model takes does not count against the call's CPU limit.

use super::CallState;
use crate::bindings::scratchpad::mcp::summariser::Host;
use crate::bindings::{SummariserError, SummaryRequest};

impl Host for CallState {
    fn model(&mut self) -> String {
        self.model.model()
    }

    fn summarise(&mut self, request: SummaryRequest) -> Result<String, SummariserError> {
        self.outside_guest(|call| call.model.summarise(&request))
    }
}
