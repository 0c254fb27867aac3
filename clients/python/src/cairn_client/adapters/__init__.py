"""Framework adapters, each an optional module with its own dependency:

- :mod:`cairn_client.adapters.langchain` (``pip install 'cairn-client[langchain]'``):
  ``memory_fetch``/``memory_grep``/``memory_search`` as LangChain ``BaseTool`` s, and an agent
  middleware / helper that offloads large ``ToolMessage`` contents to Cairn.
- :mod:`cairn_client.adapters.agents` (``pip install 'cairn-client[agents]'``): the same tools
  as OpenAI Agents SDK function tools, and a ``call_model_input_filter`` that offloads tool
  outputs over a threshold.
- :mod:`cairn_client.adapters.deepagents` (``pip install 'cairn-client[deepagents]'``, Python
  ≥ 3.11): ``CairnBackend``, a deepagents ``BackendProtocol`` keeping the agent's files and
  evicted tool results in Cairn (``read_file`` pages, ``grep``, ``glob``, ``ls``), so they
  survive a restart and are shared by every worker.

Both replace an offloaded output with Cairn's marker and the stored summary
(``[cairn: offloaded tool_output <tool> · mem://<id> · <lines> lines, <tokens> tokens]``);
the model pages it back with the tools. :mod:`cairn_client.adapters.common` holds the
framework-free pieces.
"""
