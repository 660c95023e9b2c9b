// The page loads protobufjs as a classic script (protobuf.min.js, global
// `protobuf`); the import map in the page maps the package's `import protobuf
// from 'protobufjs'` to this module.
export default globalThis.protobuf;
