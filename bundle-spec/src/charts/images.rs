//! The images a rendered chart names, compared with a bundle's as containerd resolves them.

use serde_json::Value;

/// The images `rendered` names that are not among `bundled`, sorted, each once.
///
/// `rendered` is what `helm template` prints: YAML documents, every string under an `image`
/// key an image reference (containers, init containers, ephemeral containers, and the images of
/// custom resources such as Calico's). Names are compared as containerd resolves them, so
/// `busybox:1` matches `docker.io/library/busybox:1`.
pub fn missing_images(
    rendered: &str,
    bundled: &[String],
) -> Result<Vec<String>, serde_saphyr::Error> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(rendered)?;
    let mut named = Vec::new();
    for document in &documents {
        collect_images(document, &mut named);
    }
    named.sort();
    named.dedup();
    let bundled: Vec<String> = bundled.iter().map(|b| normalized(b)).collect();
    Ok(named
        .into_iter()
        .filter(|image| !bundled.contains(&normalized(image)))
        .collect())
}

/// An image reference as containerd resolves it (`calico/node:v3` is
/// `docker.io/calico/node:v3`); a reference that does not parse stays as written, and matches
/// nothing else.
fn normalized(reference: &str) -> String {
    crate::oci::parse_reference(reference).map_or_else(|_| reference.to_owned(), |r| r.whole())
}

fn collect_images(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match value {
                    Value::String(image) if key == "image" => into.push(image.clone()),
                    _ => collect_images(value, into),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_images(item, into);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::missing_images;

    #[test]
    fn images_the_bundle_lacks_are_listed_once() {
        let rendered = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: a, image: quay.io/tigera/operator:v1.38.7}\n      - {name: b, image: docker.io/library/busybox:1}\n---\n# empty\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  initContainers:\n  - {name: c, image: docker.io/library/busybox:1}\n";
        let bundled = vec!["quay.io/tigera/operator:v1.38.7".to_owned()];
        assert_eq!(
            missing_images(rendered, &bundled).expect("yaml"),
            ["docker.io/library/busybox:1"]
        );
        // Names are compared as containerd resolves them.
        let bundled = vec![
            "quay.io/tigera/operator:v1.38.7".to_owned(),
            "docker.io/library/busybox:1".to_owned(),
        ];
        let short = rendered.replace("docker.io/library/busybox:1", "busybox:1");
        assert!(missing_images(&short, &bundled).expect("yaml").is_empty());
        assert!(missing_images("a: [", &bundled).is_err());
    }

    #[test]
    fn comparison_follows_containerd_resolution() {
        let pod = |image: &str| format!("kind: Pod\nspec:\n  containers:\n  - image: {image}\n");
        // (named by the chart, bundled, missing?)
        for (named, bundled, missing) in [
            ("nginx:1.27", "docker.io/library/nginx:1.27", false),
            (
                "docker.io/nginx:1.27",
                "docker.io/library/nginx:1.27",
                false,
            ),
            ("nginx", "docker.io/library/nginx:latest", false),
            ("nginx:1.27", "docker.io/library/nginx:1.26", true),
            (
                "quay.io/calico/node:v3.30.5",
                "docker.io/calico/node:v3.30.5",
                true,
            ),
            (
                "127.0.0.1:5000/lab/app:1.0",
                "127.0.0.1:5000/lab/app:1.0",
                false,
            ),
            ("Not A Reference", "Not A Reference", false),
        ] {
            let got = missing_images(&pod(named), &[bundled.to_owned()]).expect("yaml");
            assert_eq!(
                !got.is_empty(),
                missing,
                "{named} against {bundled}: {got:?}"
            );
        }
        // Only strings under `image` count: an `image` object (a CRD's schema) is walked into.
        let schema = "kind: CustomResourceDefinition\nspec:\n  image: {type: string, default: {image: x/y:1}}\n";
        assert_eq!(missing_images(schema, &[]).expect("yaml"), ["x/y:1"]);
    }
}
