// Starts `kiln lsp` for the YAML and JSON files of the workspace (docs/editors.md). No build
// step: `npm install` fetches vscode-languageclient, and VS Code loads this file as it is.
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration('kiln');
  const initializationOptions = { crds: config.get('crds') };
  const errorsDocument = config.get('errorsDocument');
  if (errorsDocument) {
    initializationOptions.errorsDocument = errorsDocument;
  }
  client = new LanguageClient(
    'kiln',
    'kiln',
    { command: config.get('path') || 'kiln', args: ['lsp'] },
    {
      documentSelector: [
        { scheme: 'file', language: 'yaml' },
        { scheme: 'file', language: 'json' },
      ],
      initializationOptions,
    },
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
