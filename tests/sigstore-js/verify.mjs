// The official Sigstore JavaScript verifier, offline and key-only: checks BUNDLE_JSON as a
// signature over ARTIFACT by the public key PUBKEY (PEM), as
// `cosign verify-blob --key PUBKEY --bundle BUNDLE_JSON --insecure-ignore-tlog ARTIFACT` does.
// The key is found by the bundle's hint (cosign's: base64 of the sha256 of the key's DER), so a
// wrong hint fails too. Exit status 0 and `verified` on success; 1 and the error otherwise.
import { createHash, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { bundleFromJSON } from '@sigstore/bundle';
import { Verifier, toSignedEntity, toTrustMaterial } from '@sigstore/verify';

const [bundlePath, artifactPath, keyPath] = process.argv.slice(2);
try {
  const bundle = bundleFromJSON(JSON.parse(readFileSync(bundlePath, 'utf8')));
  const der = createPublicKey(readFileSync(keyPath)).export({ type: 'spki', format: 'der' });
  const hint = createHash('sha256').update(der).digest('base64');
  // A trusted root with no authorities or logs at all: only the key is trusted.
  const root = { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [] };
  const keys = { [hint]: { rawBytes: der, keyDetails: 'PKIX_ECDSA_P256_SHA_256' } };
  const verifier = new Verifier(toTrustMaterial(root, keys), {
    tlogThreshold: 0,
    ctlogThreshold: 0,
    timestampThreshold: 0,
  });
  verifier.verify(toSignedEntity(bundle, readFileSync(artifactPath)));
  console.log('verified');
} catch (error) {
  console.error(`${error.name}: ${error.message}`);
  process.exit(1);
}
