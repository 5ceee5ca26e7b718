//! `scratchpad:mcp/summariser`: the guest's summary requests, sent to the configured model.
//! The time the model takes does not count against the call's CPU limit, and a read call's
//! store connection is given back while it thinks ([`crate::storage::Txn::pause`]).

use super::CallState;
use crate::bindings::scratchpad::mcp::summariser::Host;
use crate::bindings::{SummariserError, SummaryRequest};

impl Host for CallState {
    fn model(&mut self) -> String {
        self.model.model()
    }

    fn summarise(&mut self, request: SummaryRequest) -> Result<String, SummariserError> {
        self.outside_guest(|call| {
            if let Err(e) = call.guard.pause() {
                // Still answerable: the next statement takes a fresh connection.
                tracing::warn!(error = %e, "the call's connection was not given back before asking the model");
            }
            call.model.summarise(&request)
        })
    }
}
