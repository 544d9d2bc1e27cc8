//! Every member of a bundle in memory, as the reader verified it: what a test of the writer
//! compares with what it wrote (the store an unpack writes belongs to the installer).

use std::collections::BTreeMap;
use std::io::Read;

use crate::digest::Sha256Digest;
use crate::error::BundleError;
use crate::read::{Bundle, MemberHeader, MemberVisitor, Verified};

/// Verifies `bundle` whole and returns its members by path, with the verification's figures.
pub fn verified_members(
    bundle: &mut Bundle,
) -> Result<(BTreeMap<String, Vec<u8>>, Verified), BundleError> {
    let mut collected = Collect::default();
    let verified = bundle.walk(&mut collected)?;
    Ok((collected.members, verified))
}

#[derive(Default)]
struct Collect {
    members: BTreeMap<String, Vec<u8>>,
}

impl MemberVisitor for Collect {
    type Pending = Vec<u8>;

    fn receive(&mut self, _: &MemberHeader, data: &mut dyn Read) -> Result<Vec<u8>, BundleError> {
        let mut bytes = Vec::new();
        data.read_to_end(&mut bytes)
            .map_err(BundleError::from_read_error)?;
        Ok(bytes)
    }

    fn accept(
        &mut self,
        member: &MemberHeader,
        pending: Vec<u8>,
        _: Sha256Digest,
    ) -> Result<(), BundleError> {
        self.members
            .insert(member.path.as_str().to_owned(), pending);
        Ok(())
    }
}
