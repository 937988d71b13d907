/// The OpenAPI description, carried in the binary from `openapi.yaml`.
public enum APIDescription {
    public static let yaml: String = EmbeddedAPIDescription.files.first?.contents ?? ""
}
