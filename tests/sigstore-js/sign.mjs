// The official Sigstore JavaScript signer, offline and key-only: signs ARTIFACT with the
// PKCS#8 PEM key PRIVKEY and prints the Sigstore bundle JSON, built by `@sigstore/sign`'s
// MessageSignatureBundleBuilder with no witness (no Fulcio, no Rekor, no timestamp authority).
import { createHash, createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { bundleToJSON } from '@sigstore/bundle';
import { MessageSignatureBundleBuilder } from '@sigstore/sign';

const [artifactPath, keyPath] = process.argv.slice(2);
const privateKey = createPrivateKey(readFileSync(keyPath));
const publicKey = createPublicKey(privateKey);
const der = publicKey.export({ type: 'spki', format: 'der' });
const signer = {
  sign: async (data) => ({
    signature: sign('sha256', data, privateKey),
    key: {
      $case: 'publicKey',
      publicKey: publicKey.export({ type: 'spki', format: 'pem' }),
      hint: createHash('sha256').update(der).digest('base64'),
    },
  }),
};
const builder = new MessageSignatureBundleBuilder({ signer, witnesses: [] });
const bundle = await builder.create({ data: readFileSync(artifactPath) });
console.log(JSON.stringify(bundleToJSON(bundle)));
